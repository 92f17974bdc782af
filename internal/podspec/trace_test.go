package podspec

import (
	"testing"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// TestBuildJobTraceparent: the execution span's context is the tool container's
// TRACEPARENT, after the Tool's own env (a Tool cannot pin it), and absent without one.
func TestBuildJobTraceparent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	env := func(in Input) (string, int) {
		var last string
		n := 0
		for _, e := range signerIn(BuildJob(in, DefaultOptions()).Spec.Template.Spec).Env {
			if e.Name == podcontract.EnvTraceparent {
				last, n = e.Value, n+1
			}
		}
		return last, n
	}
	if _, n := env(testJobInput(nil)); n != 0 {
		t.Fatalf("no tracer: %d TRACEPARENT entries", n)
	}
	in := testJobInput(func(s *toolgatev1alpha1.ToolSpec) {
		s.Body.Env = append(s.Body.Env, toolgatev1alpha1.EnvVar{Name: podcontract.EnvTraceparent, Value: "pinned"})
	})
	in.Traceparent = tp
	if got, _ := env(in); got != tp {
		t.Fatalf("the last TRACEPARENT (the one the kubelet keeps) is %q, want the execution span %q", got, tp)
	}
}
