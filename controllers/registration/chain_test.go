package registration

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

func chainScope(name, parent string, admission bool) *v1alpha1.ToolScope {
	s := &v1alpha1.ToolScope{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	s.Spec.Parent = parent
	if admission {
		s.Spec.Admission = &v1alpha1.Admission{QueueName: name}
	}
	return s
}

// The walks read a chain from the call's scope up: the nearest declaration wins, a missing
// scope ends a search (and fails a full chain), and a cycle written past the ToolScope
// reconciler ends at the bound.
func TestScopeWalks(t *testing.T) {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		chainScope("leaf", "mid", false), chainScope("mid", "root", true), chainScope("root", "", true),
		chainScope("orphan", "gone", false), chainScope("loop-a", "loop-b", false), chainScope("loop-b", "loop-a", false)).Build()
	ctx := context.Background()
	declares := func(s *v1alpha1.ToolScope) bool { return s.Spec.Admission != nil }
	for _, tc := range []struct{ from, want string }{{"leaf", "mid"}, {"root", "root"}, {"orphan", ""}, {"loop-a", ""}, {"", ""}} {
		got, err := NearestScope(ctx, c, "ns", tc.from, declares)
		if err != nil || got == nil && tc.want != "" || got != nil && got.Name != tc.want {
			t.Errorf("NearestScope(%q) = %v, %v; want %q", tc.from, got, err, tc.want)
		}
	}
	chain, err := ScopeChain(ctx, c, "ns", "leaf")
	if err != nil || len(chain) != 3 || chain[0].Name != "leaf" || chain[2].Name != "root" {
		t.Fatalf("ScopeChain(leaf) = %v, %v", chain, err)
	}
	if _, err := ScopeChain(ctx, c, "ns", "orphan"); !apierrors.IsNotFound(err) {
		t.Fatalf("ScopeChain(orphan) error = %v, want NotFound", err)
	}
	if chain, err := ScopeChain(ctx, c, "ns", "loop-a"); err != nil || len(chain) != MaxScopeChain {
		t.Fatalf("ScopeChain(loop-a) = %d scopes, %v; want the bound %d", len(chain), err, MaxScopeChain)
	}
}
