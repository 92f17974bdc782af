package approvalevents_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A receiver (a chat bot, a pager bridge) imports this package to verify events: it must
// not drag in Kubernetes or the operator, only the standard library and the CloudEvents SDK.
func TestReceiversImportNoKubernetes(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/toolgate/toolgate/pkg/approvalevents").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, d := range strings.Fields(string(out)) {
		if strings.HasPrefix(d, "k8s.io/") || strings.HasPrefix(d, "sigs.k8s.io/") ||
			(strings.HasPrefix(d, "github.com/toolgate/toolgate/") && d != "github.com/toolgate/toolgate/pkg/approvalevents") {
			t.Errorf("pkg/approvalevents depends on %s", d)
		}
	}
}
