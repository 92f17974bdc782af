package toolcall

import (
	"strings"
	"testing"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/warmpool"
	"github.com/toolgate/toolgate/pipeline"
)

func withCredentials(s *toolgatev1alpha1.ToolSpec) {
	s.Body.Env = append(s.Body.Env, toolgatev1alpha1.EnvVar{Name: "GITHUB_TOKEN", ValueFrom: &toolgatev1alpha1.EnvVarSource{
		SecretKeyRef: toolgatev1alpha1.CredentialKeySelector{Name: "github", Key: "token"}}})
	s.Body.SecretFiles = []toolgatev1alpha1.SecretFile{
		{Name: "kubeconfig", SecretKeyRef: toolgatev1alpha1.CredentialKeySelector{Name: "deploy", Key: "config"}},
		{Name: "ca.pem", SecretKeyRef: toolgatev1alpha1.CredentialKeySelector{Name: "deploy", Key: "ca"}},
	}
}

// A warm pool never serves a tool with credentials: its Pods would hold the value before
// any call.
func TestWarmPoolSizeWithCredentials(t *testing.T) {
	spec := testJobInput(withCredentials).Tool
	spec.WarmPool = &toolgatev1alpha1.WarmPool{Size: 3}
	if n := warmpool.Size(spec); n != 0 {
		t.Errorf("warm pool size %d for a tool with credentials, want 0", n)
	}
	spec.Body = testJobInput(nil).Tool.Body
	if n := warmpool.Size(spec); n != 3 {
		t.Errorf("warm pool size %d without credentials, want 3", n)
	}
}

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
