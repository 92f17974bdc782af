package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// parkedCall sets up a namespace where every echo call asks for approval, creates one call
// as the user "agent" (so that the admin may approve it) and waits until it is parked.
func parkedCall(ctx SpecContext, window time.Duration) (ns string, call *v1alpha1.ToolCall) {
	ns = newNamespace(ctx)
	agent, err := env.AddUser("agent", []string{EditorsGroup})
	Expect(err).NotTo(HaveOccurred())
	create(ctx, echoTool(ns).Obj(),
		MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).ApprovalWindow(window).
			VerdictRule("always", "true", v1alpha1.VerdictAsk).Obj())
	Expect(agent.Create(ctx, MakeToolCall("parked", ns).Tool("echo").Requester("agent").
		Args(map[string]any{"text": "deploy"}).Obj())).To(Succeed())
	call = &v1alpha1.ToolCall{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "parked"}, call)).To(Succeed())
		g.Expect(call).To(HavePhase(v1alpha1.PhaseAwaitingApproval))
	}).WithContext(ctx).Should(Succeed())
	Expect(call).To(HaveVerdict(v1alpha1.VerdictAsk))
	Expect(call).To(HaveCondition(v1alpha1.ConditionAdmitted, metav1.ConditionUnknown, "AwaitingApproval"), explain(call))
	Expect(call).To(HaveCondition(v1alpha1.ConditionGuarded, metav1.ConditionUnknown, "AwaitingApproval"), explain(call))
	Expect(call.Status.ApprovalDeadline).NotTo(BeNil())
	expectNoJobs(ctx, ns)
	return ns, call
}

func answer(ctx SpecContext, w *ToolCallApprovalWrapper) {
	Expect(k8sClient.Create(ctx, w.Obj())).To(Succeed())
}

var _ = Describe("A call that asks for approval", Label("approval"), func() {
	It("runs once approved with the call's digest", func(ctx SpecContext) {
		ns, call := parkedCall(ctx, time.Hour)
		answer(ctx, MakeToolCallApproval("parked", ns).For(call))
		done := waitTerminal(ctx, ns, "parked")
		Expect(done).To(HavePhase(v1alpha1.PhaseSucceeded), explain(done))
		Expect(done).To(HaveCondition(v1alpha1.ConditionAdmitted, metav1.ConditionTrue, "Approved"))
		Expect(done).To(HaveCondition(v1alpha1.ConditionGuarded, metav1.ConditionTrue, "Approved"), "the answer settles the guards' ask too")
		Eventually(func(g Gomega) {
			a := &v1alpha1.ToolCallApproval{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "parked"}, a)).To(Succeed())
			g.Expect(a.Status.Conditions).To(ContainElement(And(HaveField("Type", v1alpha1.ConditionConsumed),
				HaveField("Status", metav1.ConditionTrue), HaveField("Reason", v1alpha1.ReasonApplied))))
		}).WithContext(ctx).Should(Succeed())
	})

	It("is Denied when the approver denies it", func(ctx SpecContext) {
		ns, call := parkedCall(ctx, time.Hour)
		answer(ctx, MakeToolCallApproval("parked", ns).For(call).Deny().Reason("not today"))
		done := waitTerminal(ctx, ns, "parked")
		Expect(done).To(HavePhase(v1alpha1.PhaseDenied), explain(done))
		Expect(done.Status.Result.Reason).To(Equal("ApprovalDenied"))
		Expect(done).To(HaveCondition(v1alpha1.ConditionGuarded, metav1.ConditionFalse, "ApprovalDenied"))
		expectNoJobs(ctx, ns)
	})

	It("is Denied when the approval carries another arguments digest", func(ctx SpecContext) {
		ns, call := parkedCall(ctx, time.Hour)
		answer(ctx, MakeToolCallApproval("parked", ns).For(call).ArgumentsDigest(Digest([]byte(`{"text":"other"}`))))
		done := waitTerminal(ctx, ns, "parked")
		Expect(done).To(HavePhase(v1alpha1.PhaseDenied), explain(done))
		Expect(done.Status.Result.Reason).To(Equal("ApprovalDigestMismatch"))
		expectNoJobs(ctx, ns)
	})

	It("is Denied with ApprovalTimeout when nobody answers within the window", func(ctx SpecContext) {
		ns, call := parkedCall(ctx, 5*time.Minute)
		fakeClock.Step(6 * time.Minute)
		poke(ctx, call)
		done := waitTerminal(ctx, ns, "parked")
		Expect(done).To(HavePhase(v1alpha1.PhaseDenied), explain(done))
		Expect(done.Status.Result.Reason).To(Equal("ApprovalTimeout"))
		expectNoJobs(ctx, ns)
	})

	It("refuses an approval by the call's own requester: the call keeps waiting", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(),
			MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).VerdictRule("always", "true", v1alpha1.VerdictAsk).Obj(),
			MakeToolCall("mine", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "x"}).Obj())
		call := &v1alpha1.ToolCall{}
		key := client.ObjectKey{Namespace: ns, Name: "mine"}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, call)).To(Succeed())
			g.Expect(call).To(HavePhase(v1alpha1.PhaseAwaitingApproval))
		}).WithContext(ctx).Should(Succeed())
		answer(ctx, MakeToolCallApproval("mine", ns).For(call))
		Eventually(func(g Gomega) {
			a := &v1alpha1.ToolCallApproval{}
			g.Expect(k8sClient.Get(ctx, key, a)).To(Succeed())
			g.Expect(a.Status.Conditions).To(ContainElement(And(HaveField("Type", v1alpha1.ConditionConsumed),
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "SelfApproval"))))
		}).WithContext(ctx).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, call)).To(Succeed())
			g.Expect(call).To(HavePhase(v1alpha1.PhaseAwaitingApproval))
		}).WithContext(ctx).WithTimeout(ConsistentDuration).Should(Succeed())
		expectNoJobs(ctx, ns)
	})
})

// poke changes a call's annotations so that the controller looks at it again (after the
// fake clock moved).
func poke(ctx SpecContext, call *v1alpha1.ToolCall) {
	patch := client.MergeFrom(call.DeepCopy())
	metav1.SetMetaDataAnnotation(&call.ObjectMeta, "test/poke", time.Now().String())
	Expect(k8sClient.Patch(ctx, call, patch)).To(Succeed())
}
