package agentclient_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A Go agent that imports pkg/agentclient (or the CLI and the gateway, built on it) must
// not pull in the operator: its reconcilers, its metrics, controller-runtime's manager,
// or a /debug/pprof handler on the default mux.
func TestClientPackagesDoNotImportTheOperator(t *testing.T) {
	forbidden := []string{
		"github.com/toolgate/toolgate/controllers",
		"github.com/toolgate/toolgate/internal/metrics",
		"sigs.k8s.io/controller-runtime/pkg/manager",
		"net/http/pprof",
	}
	for _, pkg := range []string{"github.com/toolgate/toolgate/pkg/agentclient",
		"github.com/toolgate/toolgate/internal/cli", "github.com/toolgate/toolgate/internal/gateway"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			deps[d] = true
		}
		for _, f := range forbidden {
			if deps[f] {
				t.Errorf("%s depends on %s", pkg, f)
			}
		}
	}
}
