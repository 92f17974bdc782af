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
		Consistently(func(g Gomega) bool { return jobExists(ctx, g, ns, "second") }).WithContext(ctx).
			WithTimeout(ConsistentDuration).Should(BeFalse(), "the second unsafe call waits for the first")

		finish(ctx, ns, podspec.JobName("first", 1), Outcome{Echo: true})
		Expect(waitTerminal(ctx, ns, "first")).To(HavePhase(v1alpha1.PhaseSucceeded))
		Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "second") }).WithContext(ctx).Should(BeTrue())
		finish(ctx, ns, podspec.JobName("second", 1), Outcome{Echo: true})
		Expect(waitTerminal(ctx, ns, "second")).To(HavePhase(v1alpha1.PhaseSucceeded))
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
			finish(ctx, ns, podspec.JobName(name, 1), Outcome{Echo: true})
			Expect(waitTerminal(ctx, ns, name)).To(HavePhase(v1alpha1.PhaseSucceeded))
		}
	})
})
