package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// replay is a call answered, run and deleted, then created again by its agent under the
// same name with the same arguments, while the first call's approval is still there.
type replay struct {
	ns       string
	agent    client.Client
	approver client.Client // user "carol", the shipped toolgate-approver role
	first    *v1alpha1.ToolCall
	again    *v1alpha1.ToolCall
}

// replayed plays the agent's replay. envtest runs no garbage collector: the test deletes the
// first call's Job and Pod as it would, and leaves the approval (as a real cluster does
// until the collector gets to it, and forever for an approval written without an owner).
func replayed(ctx SpecContext, window time.Duration) *replay {
	r := &replay{}
	r.ns, r.first = parkedCall(ctx, window)
	r.approver = bindShippedRole(ctx, r.ns, ApproverRole, "carol")
	var err error
	r.agent, err = env.AddUser("agent", []string{EditorsGroup})
	Expect(err).NotTo(HaveOccurred())

	By("the approver answers the first call, which runs once")
	Expect(r.approver.Create(ctx, MakeToolCallApproval("parked", r.ns).Approver("carol").For(r.first).Obj())).To(Succeed())
	done := waitTerminal(ctx, r.ns, "parked")
	Expect(done).To(HavePhase(v1alpha1.PhaseSucceeded), explain(done))
	Expect(podsIn(ctx, r.ns)).To(HaveLen(1))

	By("the agent deletes it; the Job and Pod go as garbage collection would take them")
	Expect(r.agent.Delete(ctx, done)).To(Succeed())
	collectGarbage(ctx, r.ns)
	Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(done), &v1alpha1.ToolCall{}))
	}).WithContext(ctx).Should(BeTrue())

	By("the agent creates the same call again, under the same name")
	Expect(r.agent.Create(ctx, MakeToolCall("parked", r.ns).Tool("echo").Requester("agent").
		Args(map[string]any{"text": "deploy"}).Obj())).To(Succeed())
	r.again = &v1alpha1.ToolCall{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(done), r.again)).To(Succeed())
		g.Expect(r.again.Status.ArgumentsDigest).NotTo(BeEmpty(), "admitted")
	}).WithContext(ctx).Should(Succeed())
	Expect(r.again.UID).NotTo(Equal(r.first.UID))
	Expect(r.again.Status.ArgumentsDigest).To(Equal(r.first.Status.ArgumentsDigest))
	return r
}

// expectRefused checks that the new call keeps waiting, that nothing ran for it, and that
// the old approval is marked refused for it.
func (r *replay) expectRefused(ctx SpecContext) {
	Consistently(func(g Gomega) {
		call := &v1alpha1.ToolCall{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(r.again), call)).To(Succeed())
		g.Expect(call).To(HavePhase(v1alpha1.PhaseAwaitingApproval), explain(call))
		g.Expect(call).To(HaveVerdict(v1alpha1.VerdictAsk))
	}).WithContext(ctx).WithTimeout(ConsistentDuration).Should(Succeed())
	Eventually(func(g Gomega) {
		a := approvalOf(ctx, g, r.ns, "parked")
		g.Expect(a).To(HaveCondition(v1alpha1.ConditionConsumed, metav1.ConditionFalse, v1alpha1.ReasonApprovalCallMismatch))
		c := ptr.Deref(meta.FindStatusCondition(a.Status.Conditions, v1alpha1.ConditionConsumed), metav1.Condition{})
		g.Expect(c.Message).To(ContainSubstring("the approval answers call " + string(r.first.UID) + ", not this call (" + string(r.again.UID) + ")"))
		g.Expect(c.Message).To(ContainSubstring("delete this approval to answer call parked"))
		g.Expect(a.Status.ConsumedBy).To(Equal(string(r.first.UID)), "it stays consumed by the first call")
	}).WithContext(ctx).Should(Succeed())
	expectNoJobs(ctx, r.ns)
	Expect(podsIn(ctx, r.ns)).To(BeEmpty(), "the Kubelet never started a Pod for the replayed call")
}

var _ = Describe("An approval answers one call, once", Label("approval", "replay"), func() {
	It("does not approve a call deleted and created again under the same name; the approver answers the new one", func(ctx SpecContext) {
		r := replayed(ctx, time.Hour)
		r.expectRefused(ctx)

		By("the approver cannot answer while the old approval holds the name, deletes it and answers the new call")
		err := r.approver.Create(ctx, MakeToolCallApproval("parked", r.ns).Approver("carol").For(r.again).Obj())
		Expect(apierrors.IsAlreadyExists(err)).To(BeTrue(), "the old approval holds the name: %v", err)
		Expect(r.approver.Delete(ctx, MakeToolCallApproval("parked", r.ns).Obj())).To(Succeed())
		Eventually(func() error {
			return r.approver.Create(ctx, MakeToolCallApproval("parked", r.ns).Approver("carol").For(r.again).Obj())
		}).WithContext(ctx).Should(Succeed())

		done := waitTerminal(ctx, r.ns, "parked")
		Expect(done.UID).To(Equal(r.again.UID))
		Expect(done).To(HavePhase(v1alpha1.PhaseSucceeded), explain(done))
		Expect(done).To(HaveCondition(v1alpha1.ConditionAdmitted, metav1.ConditionTrue, v1alpha1.ReasonApproved))
		Expect(podsIn(ctx, r.ns)).To(HaveLen(1), "one Pod, for the rightful answer")
		Eventually(func(g Gomega) {
			a := approvalOf(ctx, g, r.ns, "parked")
			g.Expect(a).To(HaveCondition(v1alpha1.ConditionConsumed, metav1.ConditionTrue, v1alpha1.ReasonApplied))
			g.Expect(a.Status.ConsumedBy).To(Equal(string(r.again.UID)))
		}).WithContext(ctx).Should(Succeed())
	})

	It("lets the replayed call time out with ApprovalTimeout, and the approval keeps its refusal", func(ctx SpecContext) {
		r := replayed(ctx, 5*time.Minute)
		r.expectRefused(ctx)

		fakeClock.Step(6 * time.Minute)
		poke(ctx, r.again)
		done := waitTerminal(ctx, r.ns, "parked")
		Expect(done).To(HavePhase(v1alpha1.PhaseDenied), explain(done))
		Expect(done.Status.Result.Reason).To(Equal(v1alpha1.ReasonApprovalTimeout))
		expectNoJobs(ctx, r.ns)
		Expect(podsIn(ctx, r.ns)).To(BeEmpty())
		a := &v1alpha1.ToolCallApproval{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(done), a)).To(Succeed())
		Expect(a).To(HaveCondition(v1alpha1.ConditionConsumed, metav1.ConditionFalse, v1alpha1.ReasonApprovalCallMismatch))
	})

	It("refuses an approval created before the call was parked", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		approver := bindShippedRole(ctx, ns, ApproverRole, "carol")
		agent, err := env.AddUser("agent", []string{EditorsGroup})
		Expect(err).NotTo(HaveOccurred())
		create(ctx, echoTool(ns).Obj(),
			MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).VerdictRule("always", "true", v1alpha1.VerdictAsk).Obj())

		By("with the operator down, a call is created and answered before anything asked")
		Expect(mgr.Stop()).To(Succeed())
		mgr = nil
		DeferCleanup(func() {
			if mgr == nil {
				startManager()
			}
		})
		args := map[string]any{"text": "deploy"}
		call := MakeToolCall("early", ns).Tool("echo").Requester("agent").Args(args).Obj()
		Expect(agent.Create(ctx, call)).To(Succeed())
		early := MakeToolCallApproval("early", ns).Approver("carol").For(call).ArgumentsDigest(Digest([]byte(`{"text":"deploy"}`))).Obj()
		Expect(approver.Create(ctx, early)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(early), early)).To(Succeed())

		By("the operator parks the call two seconds after the approval was written")
		fakeClock.SetTime(early.CreationTimestamp.Add(2 * time.Second))
		startManager()

		Eventually(func(g Gomega) {
			a := approvalOf(ctx, g, ns, "early")
			g.Expect(a).To(HaveCondition(v1alpha1.ConditionConsumed, metav1.ConditionFalse, v1alpha1.ReasonApprovalStale))
			g.Expect(ptr.Deref(meta.FindStatusCondition(a.Status.Conditions, v1alpha1.ConditionConsumed), metav1.Condition{}).Message).To(ContainSubstring("before the call was parked"))
			g.Expect(a.Status.ConsumedBy).To(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
		Consistently(func(g Gomega) {
			got := &v1alpha1.ToolCall{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(call), got)).To(Succeed())
			g.Expect(got).To(HavePhase(v1alpha1.PhaseAwaitingApproval))
		}).WithContext(ctx).WithTimeout(ConsistentDuration).Should(Succeed())
		expectNoJobs(ctx, ns)
	})
})

var _ = Describe("The shipped approver role", Label("rbac", "approval"), func() {
	It("may delete a refused approval and answer again, as the docs tell approvers to", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		approver := bindShippedRole(ctx, ns, ApproverRole, "carol")
		agent := bindShippedRole(ctx, ns, AgentRole, "robot")
		call := parkedCallAs(ctx, ns, agent, "robot")

		By("an approver answers for another call's uid: refused")
		Expect(approver.Create(ctx, MakeToolCallApproval("c", ns).Approver("carol").CallUID("0b9e0f6a-0000-4000-8000-000000000002").
			ArgumentsDigest(call.Status.ArgumentsDigest).Obj())).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(approvalOf(ctx, g, ns, "c")).To(HaveCondition(v1alpha1.ConditionConsumed, metav1.ConditionFalse, v1alpha1.ReasonApprovalCallMismatch))
		}).WithContext(ctx).Should(Succeed())

		By("an approver deletes the refused approval and answers")
		Expect(approver.Delete(ctx, MakeToolCallApproval("c", ns).Obj())).To(Succeed())
		Eventually(func() error {
			return approver.Create(ctx, MakeToolCallApproval("c", ns).Approver("carol").For(call).Obj())
		}).WithContext(ctx).Should(Succeed())
		Expect(waitTerminal(ctx, ns, "c")).To(HavePhase(v1alpha1.PhaseSucceeded))

		By("the agent role still cannot delete approvals")
		err := agent.Delete(ctx, MakeToolCallApproval("c", ns).Obj())
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "an agent cannot delete an approval: %v", err)
	})
})

// approvalOf reads the ToolCallApproval ns/name.
func approvalOf(ctx SpecContext, g Gomega, ns, name string) *v1alpha1.ToolCallApproval {
	a := &v1alpha1.ToolCallApproval{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, a)).To(Succeed())
	return a
}

// podsIn lists the Pods of the namespace (the simulated Kubelet's).
func podsIn(ctx SpecContext, ns string) []corev1.Pod {
	pods := &corev1.PodList{}
	Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
	return pods.Items
}

// collectGarbage deletes the namespace's Jobs and Pods, as the garbage collector does once
// their call is gone, and waits until they are.
func collectGarbage(ctx SpecContext, ns string) {
	Expect(k8sClient.DeleteAllOf(ctx, &batchv1.Job{}, client.InNamespace(ns),
		client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	Expect(k8sClient.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))).To(Succeed())
	Eventually(func(g Gomega) {
		jobs := &batchv1.JobList{}
		g.Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
		g.Expect(jobs.Items).To(BeEmpty())
		g.Expect(podsIn(ctx, ns)).To(BeEmpty())
	}).WithContext(ctx).Should(Succeed())
}
