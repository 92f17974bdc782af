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
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

// getJob reads a Job from the API server.
func getJob(ctx SpecContext, ns, name string) (*batchv1.Job, error) {
	job := &batchv1.Job{}
	return job, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job)
}

// admit plays Kueue admitting a Job: spec.suspend set false (its Job reconciler does so
// once the Workload is admitted).
func admit(ctx SpecContext, ns, name string) {
	GinkgoHelper()
	job, err := getJob(ctx, ns, name)
	Expect(err).To(Succeed())
	patch := client.MergeFrom(job.DeepCopy())
	job.Spec.Suspend = ptr.To(false)
	Expect(k8sClient.Patch(ctx, job, patch)).To(Succeed())
}

// executed is the call's Executed condition (nil: none yet).
func executed(ctx SpecContext, g Gomega, ns, name string) *metav1.Condition {
	call := &v1alpha1.ToolCall{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, call)).To(Succeed())
	return meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionExecuted)
}

// waitWaiting waits until the call shows that its Job waits for admission.
func waitWaiting(ctx SpecContext, ns, name string) *metav1.Condition {
	GinkgoHelper()
	var cond *metav1.Condition
	Eventually(func(g Gomega) {
		cond = executed(ctx, g, ns, name)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonWaitingForAdmission))
	}).WithContext(ctx).Should(Succeed())
	return cond
}

var _ = Describe("Bursts queue: Jobs behind a Kueue LocalQueue", Label("bursts"), func() {
	It("creates the Job suspended and labelled, shows the wait, and runs the call once Kueue admits it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeToolScope("burst", ns).Admission("tools", 0).Obj(), echoTool(ns).Obj(),
			MakeToolCall("queued", ns).Tool("echo").Scope("burst").Args(map[string]any{"text": "hi"}).Obj())

		cond := waitWaiting(ctx, ns, "queued")
		Expect(cond.Status).To(Equal(metav1.ConditionUnknown))
		Expect(cond.Message).To(ContainSubstring("LocalQueue tools"))
		job, err := getJob(ctx, ns, podspec.JobName("queued", 1))
		Expect(err).To(Succeed())
		Expect(job.Spec.Suspend).To(HaveValue(BeTrue()))
		Expect(job.Labels).To(HaveKeyWithValue(podspec.LabelKueueQueue, "tools"))
		Expect(job.Annotations).To(HaveKeyWithValue(podspec.AnnotationAdmissionMaxWait, "10m0s"), "the operator's default bound")
		Expect(job.Spec.Template.Labels).NotTo(HaveKey(podspec.LabelKueueQueue), "Kueue admits the Job, not its Pod")
		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		Expect(pods.Items).To(BeEmpty(), "no Pod for a suspended Job")

		admit(ctx, ns, job.Name)
		call := waitTerminal(ctx, ns, "queued")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(call).To(HaveCondition(v1alpha1.ConditionExecuted, metav1.ConditionTrue, ""))
	})

	It("ends a call never admitted within admission.maxWait NotAdmitted, its Job deleted", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeToolScope("burst", ns).Admission("tools", 2*time.Second).Obj(), echoTool(ns).Obj(),
			MakeToolCall("starved", ns).Tool("echo").Scope("burst").Args(map[string]any{"text": "hi"}).Obj())
		waitWaiting(ctx, ns, "starved")
		jobName := podspec.JobName("starved", 1)
		job, err := getJob(ctx, ns, jobName)
		Expect(err).To(Succeed())
		Expect(job.Annotations).To(HaveKeyWithValue(podspec.AnnotationAdmissionMaxWait, "2s"))

		fakeClock.Step(3 * time.Second)
		call := &v1alpha1.ToolCall{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "starved"}, call)).To(Succeed())
		poke(ctx, call)
		call = waitTerminal(ctx, ns, "starved")
		Expect(call).To(HavePhase(v1alpha1.PhaseFailed), explain(call))
		Expect(call).To(HaveCondition(v1alpha1.ConditionExecuted, metav1.ConditionFalse, v1alpha1.ReasonNotAdmitted))
		Expect(call.Status.Result.Reason).To(Equal(v1alpha1.ReasonNotAdmitted))
		Expect(call.Status.Result.IsError).To(BeTrue())
		Expect(call.Status.Result.Error).To(Equal("the tool call waited longer than 2s for capacity and was not run"))
		Eventually(func() error { _, err := getJob(ctx, ns, jobName); return err }).WithContext(ctx).
			Should(Satisfy(apierrors.IsNotFound), "the Job is deleted, its finalizer released")
		Expect(kubelet.PodStarts()).NotTo(ContainElement(HaveField("Job", jobName)), "the body never ran")
	})

	It("counts the tool's timeout from admission: a call that waited longer than its timeout still runs", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("late", Outcome{Hold: true})
		kubelet.SetClock(fakeClock) // the Job controller's admission time on the operator's clock
		DeferCleanup(func() { kubelet.SetClock(nil) })
		create(ctx, MakeToolScope("burst", ns).Admission("tools", 10*time.Minute).Obj(),
			MakeTool("late", ns).Image("example/echo:1").Command("/echo").Timeout(5*time.Second).Obj(),
			MakeToolCall("late", ns).Tool("late").Scope("burst").Args(map[string]any{}).Obj())
		waitWaiting(ctx, ns, "late")
		jobName := podspec.JobName("late", 1)

		By("waiting past the tool's timeout plus the operator's grace: still waiting, not DeadlineExceeded")
		fakeClock.Step(time.Minute)
		call := &v1alpha1.ToolCall{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "late"}, call)).To(Succeed())
		poke(ctx, call)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "late"}, call)).To(Succeed())
			g.Expect(call.Annotations).To(HaveKey("test/poke"))
			g.Expect(call.Status.Phase).To(Equal(v1alpha1.PhaseRunning))
		}).WithContext(ctx).Should(Succeed())

		By("admitted a minute late, the body runs its full timeout")
		admit(ctx, ns, jobName)
		Eventually(kubelet.PodStarts).WithContext(ctx).Should(ContainElement(HaveField("Job", jobName)))
		Eventually(func(g Gomega) string { return executed(ctx, g, ns, "late").Reason }).WithContext(ctx).
			Should(Equal(v1alpha1.ReasonRunning), "admitted: Running again")
		poke(ctx, call)
		finish(ctx, ns, jobName, Outcome{Echo: true})
		call = waitTerminal(ctx, ns, "late")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
	})
})

var _ = Describe("Bursts queue: the operator's start bound", Label("bursts"), func() {
	BeforeEach(func() {
		Expect(mgr.Stop()).To(Succeed())
		mgr = suite.StartManager(env, ManagerOptions{Clock: fakeClock, Kubelet: kubelet, Call: CallOptions{MaxConcurrentStarts: 2}})
		DeferCleanup(func() {
			Expect(mgr.Stop()).To(Succeed())
			startManager()
		})
	})

	It("resumes at most --max-concurrent-starts Jobs whose tool container has not started, oldest first", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		// Held in ContainerCreating: each resumed Job keeps its start slot.
		kubelet.Script("slow-start", Outcome{Waiting: "ContainerCreating"})
		create(ctx, MakeTool("slow-start", ns).Image("example/echo:1").Command("/echo").Obj())
		names := []string{"b1", "b2", "b3", "b4", "b5"}
		for _, n := range names {
			create(ctx, MakeToolCall(n, ns).Tool("slow-start").Args(map[string]any{}).Obj())
		}
		resumed := func(g Gomega) []string {
			jobs := &batchv1.JobList{}
			g.Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
			g.Expect(jobs.Items).To(HaveLen(len(names)))
			var out []string
			for _, j := range jobs.Items {
				g.Expect(j.Labels).To(HaveKeyWithValue(podspec.LabelStartGate, podspec.StartGateOperator))
				g.Expect(j.Labels).NotTo(HaveKey(podspec.LabelKueueQueue))
				if !podspec.JobSuspended(&j) {
					out = append(out, j.Annotations[podcontract.AnnotationCallName])
				}
			}
			return out
		}
		Eventually(resumed).WithContext(ctx).Should(HaveLen(2))
		for _, n := range names {
			Eventually(func(g Gomega) *metav1.Condition { return executed(ctx, g, ns, n) }).WithContext(ctx).Should(Or(
				HaveField("Reason", v1alpha1.ReasonWaitingForAdmission), HaveField("Reason", v1alpha1.ReasonRunning)))
		}
		Consistently(resumed).WithContext(ctx).WithTimeout(3*time.Second).Should(HaveLen(2), "the bound holds while both start")

		By("a started tool container frees its slot: the next waiting Job resumes")
		first := resumed(Default)
		Eventually(func() error { return kubelet.Finish(ctx, ns, podspec.JobName(first[0], 1), Outcome{Echo: true}) }).WithContext(ctx).Should(Succeed())
		Eventually(resumed).WithContext(ctx).Should(HaveLen(3))
	})
})
