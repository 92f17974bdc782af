package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// cancelAs sets spec.cancel on the call as the user behind c, as `toolgate cancel` does.
func cancelAs(ctx SpecContext, c client.Client, ns, name string) error {
	call := &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return c.Patch(ctx, call, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`)))
}

// expectCancelled checks the call ended Failed with the frozen Cancelled result of stage.
func expectCancelled(call *v1alpha1.ToolCall, stage string) {
	GinkgoHelper()
	Expect(call).To(HavePhase(v1alpha1.PhaseFailed), explain(call))
	res := call.Status.Result
	Expect(res.IsError).To(BeTrue())
	Expect(res.Reason).To(Equal(v1alpha1.ReasonCancelled))
	Expect(res.Meta).To(HaveKeyWithValue(pipeline.MetaCancelled, stage))
	Expect(call).To(HaveCondition(v1alpha1.ConditionExecuted, metav1.ConditionFalse, v1alpha1.ReasonCancelled))
	digest, err := StoredResultDigest(call)
	Expect(err).NotTo(HaveOccurred())
	Expect(call.Status.ResultDigest).To(Equal(digest), "the result is frozen under its digest")
	Expect(call.Status.ExpiresAt).NotTo(BeNil(), "retention removes it, later")
}

var _ = Describe("Cancelling a call", Label("cancel"), func() {
	It("stops a running call's Job and Pod and keeps the call, Failed/Cancelled, frozen", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		agent := bindShippedRole(ctx, ns, AgentRole, "robot")
		kubelet.Script("long", Outcome{Hold: true})
		create(ctx, MakeTool("long", ns).Image("example/long:1").Command("/long").Obj())
		Expect(agent.Create(ctx, MakeToolCall("c", ns).Tool("long").Requester("robot").Args(map[string]any{}).Obj())).To(Succeed())
		jobKey := client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}
		Eventually(func(g Gomega) {
			job := &batchv1.Job{}
			g.Expect(k8sClient.Get(ctx, jobKey, job)).To(Succeed())
			g.Expect(job.Status.Active).To(BeNumerically("==", 1), "the Pod runs")
		}).WithContext(ctx).Should(Succeed())

		Expect(cancelAs(ctx, agent, ns, "c")).To(Succeed(), "the requester cancels its own call")
		call := waitTerminal(ctx, ns, "c")
		expectCancelled(call, pipeline.CancelledWhileRunning)
		Expect(call.Status.Attempts).To(HaveLen(1))
		Expect(call.Status.Attempts[0].Reason).To(Equal(v1alpha1.ReasonCancelled))
		Expect(call.Status.Attempts[0].CompletionTime).NotTo(BeNil())

		Eventually(func(g Gomega) {
			job := &batchv1.Job{}
			err := k8sClient.Get(ctx, jobKey, job)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Job is gone: %v %v %v", err, job.Finalizers, job.DeletionTimestamp)
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty(), "the Pod is gone")
		}).WithContext(ctx).Should(Succeed())
		kept := &v1alpha1.ToolCall{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(call), kept)).To(Succeed(), "the record stays")
		Expect(kept.Status.ResultDigest).To(Equal(call.Status.ResultDigest))

		By("the cancel field cannot be unset, not even by an admin")
		kept.Spec.Cancel = false
		Expect(k8sClient.Update(ctx, kept)).To(BeAPIError(metav1.StatusReasonInvalid, "spec.cancel cannot be unset"))
	})

	It("stops a running warm call's claimed Pod and keeps the call, Failed/Cancelled", Label("warm"), func(ctx SpecContext) {
		ns := newNamespace(ctx)
		agent := bindShippedRole(ctx, ns, AgentRole, "robot")
		kubelet.Script("longw", Outcome{After: 20 * time.Second}) // a warm body that runs on (Hold is cold-only)
		create(ctx, MakeTool("longw", ns).Image("example/long:1").Command("/long").WarmPool(1, 0).Obj())
		readyPool(ctx, ns, 1)
		Expect(agent.Create(ctx, MakeToolCall("cw", ns).Tool("longw").Requester("robot").Args(map[string]any{}).Obj())).To(Succeed())
		var podName string
		Eventually(func(g Gomega) {
			call := &v1alpha1.ToolCall{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cw"}, call)).To(Succeed())
			g.Expect(call.Status.Attempts).To(HaveLen(1))
			g.Expect(call.Status.Attempts[0].Path).To(Equal(v1alpha1.PathWarm))
			podName = call.Status.Attempts[0].PodName
			g.Expect(kubelet.Handovers()).To(ContainElement(HaveField("Pod", podName)), "the body got its arguments")
		}).WithContext(ctx).Should(Succeed())

		Expect(cancelAs(ctx, agent, ns, "cw")).To(Succeed())
		call := waitTerminal(ctx, ns, "cw")
		expectCancelled(call, pipeline.CancelledWhileRunning)
		Expect(call.Status.Attempts[0].Reason).To(Equal(v1alpha1.ReasonCancelled))
		Expect(jobsIn(ctx, ns)).To(BeEmpty())
		Eventually(func(g Gomega) {
			p := &corev1.Pod{}
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podName}, p)
			g.Expect(apierrors.IsNotFound(err) || (err == nil && !p.DeletionTimestamp.IsZero())).To(BeTrue(), "the claimed Pod goes: %v", err)
		}).WithContext(ctx).Should(Succeed())
	})

	It("ends a call parked for approval; another agent may not cancel it, an approver may", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		agent := bindShippedRole(ctx, ns, AgentRole, "robot")
		intruder := bindShippedRole(ctx, ns, AgentRole, "mallory")
		approver := bindShippedRole(ctx, ns, ApproverRole, "carol")
		parkedCallAs(ctx, ns, agent, "robot")

		err := cancelAs(ctx, intruder, ns, "c")
		Expect(IsCancelPolicyDenial(err)).To(BeTrue(), "another user's cancel is refused at admission: %v", err)
		Expect(err.Error()).To(ContainSubstring("only the call's requester (robot) or a user granted the verb cancel"))
		Expect(err.Error()).To(ContainSubstring("mallory is neither"))
		err = intruder.Delete(ctx, &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "an agent may not delete calls: %v", err)

		Expect(cancelAs(ctx, approver, ns, "c")).To(Succeed(), "a user granted cancel may cancel anyone's call")
		call := waitTerminal(ctx, ns, "c")
		expectCancelled(call, pipeline.CancelledBeforeRunning)
		Expect(call.Spec.Requester).To(Equal("robot"))
		jobs := &batchv1.JobList{}
		Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
		Expect(jobs.Items).To(BeEmpty(), "a parked call never had a Job")
	})

	It("ends a call queued behind its session and lets the session go on", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("serial", Outcome{Hold: true})
		create(ctx, MakeTool("serial", ns).Image("example/serial:1").Command("/serial").Obj(),
			MakeToolCall("first", ns).Tool("serial").Session("s").Args(map[string]any{}).Obj())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "first"}, &v1alpha1.ToolCall{})).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		create(ctx, MakeToolCall("second", ns).Tool("serial").Session("s").Args(map[string]any{}).Obj())
		Eventually(func(g Gomega) {
			call := &v1alpha1.ToolCall{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "second"}, call)).To(Succeed())
			g.Expect(call).To(HavePhase(v1alpha1.PhaseQueued))
		}).WithContext(ctx).Should(Succeed())

		Expect(cancelAs(ctx, k8sClient, ns, "second")).To(Succeed())
		expectCancelled(waitTerminal(ctx, ns, "second"), pipeline.CancelledBeforeRunning)
		finish(ctx, ns, podspec.JobName("first", 1), Outcome{Echo: true})
		Expect(waitTerminal(ctx, ns, "first")).To(HavePhase(v1alpha1.PhaseSucceeded))
	})

	It("ends a call created cancelled before it is admitted", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), MakeToolCall("c", ns).Tool("echo").Args(map[string]any{"text": "x"}).Cancel().Obj())
		call := waitTerminal(ctx, ns, "c")
		expectCancelled(call, pipeline.CancelledBeforeRunning)
		Expect(call.Status.Attempts).To(BeEmpty())
	})

	It("changes nothing on a call that already finished", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("echo", Outcome{Echo: true})
		create(ctx, echoTool(ns).Obj(), MakeToolCall("c", ns).Tool("echo").Args(map[string]any{"text": "x"}).Obj())
		done := waitTerminal(ctx, ns, "c")
		Expect(done).To(HavePhase(v1alpha1.PhaseSucceeded), explain(done))

		Expect(cancelAs(ctx, k8sClient, ns, "c")).To(Succeed(), "the field may be set, it has no effect")
		Consistently(func(g Gomega) {
			call := &v1alpha1.ToolCall{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(done), call)).To(Succeed())
			g.Expect(call.Spec.Cancel).To(BeTrue())
			g.Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded))
			g.Expect(call.Status.Result).To(Equal(done.Status.Result))
			g.Expect(call.Status.ResultDigest).To(Equal(done.Status.ResultDigest))
		}).WithContext(ctx).WithTimeout(2 * time.Second).Should(Succeed())
	})
})
