package toolcall

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// liveRegistry over a fake API reader whose ToolPolicy LISTs take their answer when they
// start and are held until released: a policy created while a LIST is in flight must govern
// every call that asked after it was created, and a burst shares its LISTs.
func TestLiveRegistrySharesListsButNeverAnswersFromAListStartedEarlier(t *testing.T) {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	var lists atomic.Int32
	listed, release := make(chan struct{}, 10), make(chan struct{})
	live := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lists.Add(1)
			err := c.List(ctx, list, opts...) // the answer is what existed when the LIST started
			if _, ok := list.(*v1alpha1.ToolPolicyList); ok && lists.Load() <= 4 {
				listed <- struct{}{}
				<-release
			}
			return err
		}}).Build()
	r := (&Reconciler{APIReader: live}).wire()
	ctx := context.Background()
	type got struct {
		reg *registry
		err error
	}
	askRegistry := func() chan got {
		out := make(chan got, 1)
		go func() {
			reg, err := r.admission.liveRegistry(ctx, "ns")
			out <- got{reg, err}
		}()
		return out
	}

	first := askRegistry()
	<-listed // the first round's ToolPolicy LIST has its answer and is in flight
	policy := &v1alpha1.ToolPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny-all", Namespace: "ns"},
		Spec: v1alpha1.ToolPolicySpec{Stage: v1alpha1.StagePreExecute,
			Rules: []v1alpha1.PolicyRule{{Name: "r", Expression: "true", Verdict: v1alpha1.VerdictDeny}}}}
	if err := live.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	const burst = 20
	later := make([]chan got, 0, burst)
	for range burst {
		later = append(later, askRegistry())
	}
	gomega.NewWithT(t).Eventually(func() int { return r.admission.registries.Waiting("ns") }).WithTimeout(10*time.Second).WithPolling(time.Millisecond).
		Should(gomega.Equal(burst), "waiting until the burst joined the next round")
	close(release)
	if g := <-first; g.err != nil || len(g.reg.policies) != 0 {
		t.Fatalf("first caller: %v, %d policies (its LIST started before the policy existed)", g.err, len(g.reg.policies))
	}
	for i, ch := range later {
		g := <-ch
		if g.err != nil || len(g.reg.policies) != 1 {
			t.Fatalf("caller %d, who asked after the policy was created: %v, %d policies; want the policy", i, g.err, len(g.reg.policies))
		}
	}
	if n := lists.Load(); n != 8 {
		t.Errorf("%d callers cost %d LISTs, want 8 (two rounds of four)", burst+1, n)
	}
}
