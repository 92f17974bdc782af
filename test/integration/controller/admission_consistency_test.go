package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Admission reads the registrations live and shares those reads among the calls that ask
// at the same time (controllers/internal/coalesce). Sharing must never hand a call the answer of
// a read that started before the call existed: a policy created just before a call governs
// it, however busy the operator is with other calls of the namespace.
var _ = Describe("A policy created just before a call", Label("admission", "policy", "consistency"), func() {
	It("governs the call, in 100 back-to-back pairs during a burst of other calls", func(ctx SpecContext) {
		const pairs, background, creators = 100, 300, 4
		const pairEvery, backgroundEvery = 60 * time.Millisecond, 20 * time.Millisecond
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		DeferCleanup(deleteAllIn, ns)

		// The load: other calls of the namespace, created at a steady rate while the pairs
		// run, so that the operator's shared reads are in flight when a pair's call asks. (A
		// burst would not do: its calls queue, and a call that waited in the queue asks long
		// after its policy was created, when any read in flight has it anyway.)
		var wg sync.WaitGroup
		next := make(chan int)
		for range creators {
			wg.Go(func() {
				defer GinkgoRecover()
				for i := range next {
					Expect(k8sClient.Create(ctx, MakeToolCall(fmt.Sprintf("bg-%03d", i), ns).Tool("echo").
						Requester(AdminUser).Args(map[string]any{"text": "background"}).Obj())).To(Succeed())
				}
			})
		}
		go func() {
			defer close(next)
			tick := time.NewTicker(backgroundEvery)
			defer tick.Stop()
			for i := range background {
				select {
				case next <- i:
				case <-ctx.Done():
					return
				}
				<-tick.C
			}
		}()

		tick := time.NewTicker(pairEvery)
		defer tick.Stop()
		for i := range pairs {
			<-tick.C
			text := fmt.Sprintf("pair-%03d", i)
			create(ctx,
				MakeToolPolicy("deny-"+text, ns).Stage(v1alpha1.StagePreExecute).Rule(v1alpha1.PolicyRule{
					Name: "this-pair", Expression: fmt.Sprintf("arguments.text == %q", text),
					Verdict: v1alpha1.VerdictDeny, Message: "denied: " + text}).Obj(),
				MakeToolCall(text, ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": text}).Obj())
		}
		wg.Wait()

		// The verdict waits for the pairs, then for the burst, to drain, for as long as they
		// keep draining (WaitDrained fails only when no call ends for LongTimeout): what is
		// judged is the verdict each call gets, not how fast this machine gets there.
		Expect(WaitDrained(ctx, pairs, LongTimeout, ended(ns, "pair-"))).To(Succeed(), "the pairs end")
		for i := range pairs {
			text := fmt.Sprintf("pair-%03d", i)
			call := &v1alpha1.ToolCall{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: text}, call)).To(Succeed())
			Expect(call).To(HavePhase(v1alpha1.PhaseDenied), "%s: the policy created just before it must govern it\n%s", text, explain(call))
			Expect(call.Status.Result.Error).To(Equal("denied: " + text))
		}
		Expect(WaitDrained(ctx, background, LongTimeout, ended(ns, "bg-"))).To(Succeed(), "the background calls end")
		calls := &v1alpha1.ToolCallList{}
		Expect(k8sClient.List(ctx, calls, client.InNamespace(ns))).To(Succeed())
		for _, c := range calls.Items {
			if strings.HasPrefix(c.Name, "bg-") {
				Expect(c).To(HavePhase(v1alpha1.PhaseSucceeded), "%s: no pair's policy touches a background call\n%s", c.Name, explain(&c))
			}
		}
	})
})

// ended counts the calls of ns named prefix… that have ended, in the operator's cache (a
// poll every Interval of hundreds of calls would load the API server it measures).
func ended(ns, prefix string) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		calls := &v1alpha1.ToolCallList{}
		if err := mgr.Client.List(ctx, calls, client.InNamespace(ns)); err != nil {
			return 0, err
		}
		n := 0
		for _, c := range calls.Items {
			if strings.HasPrefix(c.Name, prefix) && c.Status.Phase.IsTerminal() {
				n++
			}
		}
		return n, nil
	}
}

// deleteAllIn deletes the calls, Jobs and Pods of ns and waits until they are gone, for as
// long as they keep going: a burst left behind would be listed again by every later spec
// that restarts the operator.
func deleteAllIn(ctx SpecContext, ns string) {
	GinkgoHelper()
	Expect(k8sClient.DeleteAllOf(ctx, &v1alpha1.ToolCall{}, client.InNamespace(ns))).To(Succeed())
	Expect(k8sClient.DeleteAllOf(ctx, &batchv1.Job{}, client.InNamespace(ns),
		client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	Expect(k8sClient.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))).To(Succeed())
	left := func(ctx context.Context) (int, error) {
		n := 0
		for _, list := range []client.ObjectList{&v1alpha1.ToolCallList{}, &batchv1.JobList{}, &corev1.PodList{}} {
			if err := mgr.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
				return 0, err
			}
			n += meta.LenList(list)
		}
		return -n, nil // rises to 0 as they go
	}
	Expect(WaitDrained(ctx, 0, LongTimeout, left)).To(Succeed(), "the burst's objects go")
}
