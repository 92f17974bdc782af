package controller_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// jobExists reports whether the first attempt's Job of a call exists.
func jobExists(ctx SpecContext, g Gomega, ns, call string) bool {
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName(call, 1)}, &batchv1.Job{})
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

// endHeld ends a held call's first attempt with an echo and waits for it to succeed.
func endHeld(ctx SpecContext, ns, call string) {
	GinkgoHelper()
	finish(ctx, ns, podspec.JobName(call, 1), Outcome{Echo: true})
	Expect(waitTerminal(ctx, ns, call)).To(HavePhase(v1alpha1.PhaseSucceeded))
}

// startsNext waits until the call's first attempt's Job exists.
func startsNext(ctx SpecContext, ns, call string) {
	GinkgoHelper()
	Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, call) }).WithContext(ctx).Should(BeTrue(), "%s starts", call)
}

// staysQueued checks that the call's first attempt does not start for ConsistentDuration.
func staysQueued(ctx SpecContext, ns, call, why string) {
	GinkgoHelper()
	Consistently(func(g Gomega) bool { return jobExists(ctx, g, ns, call) }).WithContext(ctx).
		WithTimeout(ConsistentDuration).Should(BeFalse(), why)
}

var _ = Describe("Calls of one session", Label("session"), func() {
	It("never run two unsafe calls at once, and start the next when the barrier ends", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("writer", Outcome{Hold: true})
		create(ctx, MakeTool("writer", ns).Image("example/w:1").Command("/w").Obj())
		create(ctx, MakeToolCall("first", ns).Tool("writer").Session("s").Requester(AdminUser).Args(map[string]any{}).Obj())
		Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "first") }).WithContext(ctx).Should(BeTrue())
		create(ctx, MakeToolCall("second", ns).Tool("writer").Session("s").Requester(AdminUser).Args(map[string]any{}).Obj())
		Eventually(func(g Gomega) {
			c := &v1alpha1.ToolCall{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "second"}, c)).To(Succeed())
			g.Expect(c).To(HavePhase(v1alpha1.PhaseQueued))
		}).WithContext(ctx).Should(Succeed())
		staysQueued(ctx, ns, "second", "the second unsafe call waits for the first")

		endHeld(ctx, ns, "first")
		startsNext(ctx, ns, "second")
		endHeld(ctx, ns, "second")
	})

	It("run concurrency-safe calls in parallel", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("reader", Outcome{Hold: true})
		create(ctx, MakeTool("reader", ns).Image("example/r:1").Command("/r").ConcurrencySafe(true).Obj())
		for _, name := range []string{"r1", "r2", "r3"} {
			create(ctx, MakeToolCall(name, ns).Tool("reader").Session("s").Requester(AdminUser).Args(map[string]any{}).Obj())
		}
		Eventually(func(g Gomega) {
			for _, name := range []string{"r1", "r2", "r3"} {
				g.Expect(jobExists(ctx, g, ns, name)).To(BeTrue(), "%s runs while the others run", name)
			}
		}).WithContext(ctx).Should(Succeed())
		for _, name := range []string{"r1", "r2", "r3"} {
			endHeld(ctx, ns, name)
		}
	})
})
