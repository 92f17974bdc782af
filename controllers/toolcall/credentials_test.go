package toolcall

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/pipeline"
)

// The kubelet's words naming a missing Secret reach the Executed condition, after the
// result's error (jobexec's TestCredentialMissingDetail: never the result).
func TestCredentialMissingExecutedMessage(t *testing.T) {
	msg := `secret "github" not found`
	o := pipeline.Outcome{Attempt: 1, TerminationReason: pipeline.TerminationCredentialMissing, Detail: "kubelet: " + msg}
	res := pipeline.Normalize(o, pipeline.NormalizeOptions{})
	if got := executedMessage(res, o); !strings.HasSuffix(got, "(kubelet: "+msg+")") || !strings.HasPrefix(got, res.Error) {
		t.Errorf("Executed message %q, want the result's error and the kubelet's words", got)
	}
}
