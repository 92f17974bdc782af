package controller_test

import (
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/controllers/executor/jobexec"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// refusalMessage is what the test's admission policy answers a Job create with.
const refusalMessage = "Jobs are refused in this namespace by the test's admission policy"

// refuseJobs installs a ValidatingAdmissionPolicy that refuses every Job created in ns with
// the given status reason (Invalid or Forbidden), and waits until it is in effect.
func refuseJobs(ctx SpecContext, ns string, reason metav1.StatusReason) {
	GinkgoHelper()
	probe := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "example/probe:1"}},
		}}},
	}
	remove, err := MakeRefusal("refuse-jobs-"+ns, "batch", "jobs", refusalMessage).Reason(reason).InNamespace(ns).
		Apply(ctx, k8sClient, probe)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(remove)
}

// expectRejected checks a call that ended because Kubernetes refused its Job: Failed
// ExecutionRejected, the API server's message for operators (condition, event), none of it
// for the model, and no Job.
func expectRejected(ctx SpecContext, call *v1alpha1.ToolCall, apiReason string) {
	GinkgoHelper()
	expectFailure(call, v1alpha1.ReasonExecutionRejected)
	Expect(call.Status.Result.Meta).To(HaveKeyWithValue(pipeline.MetaKubernetesReason, apiReason))
	Expect(call.Status.Result.Error).NotTo(ContainSubstring(refusalMessage), "the model does not see the cluster's policies")
	Expect(call.Status.Attempts).To(ConsistOf(HaveField("Reason", v1alpha1.ReasonExecutionRejected)))
	Expect(call).To(HaveCondition(v1alpha1.ConditionExecuted, metav1.ConditionFalse, v1alpha1.ReasonExecutionRejected))
	for _, c := range call.Status.Conditions {
		if c.Type == v1alpha1.ConditionExecuted {
			Expect(c.Message).To(ContainSubstring(refusalMessage), "operators see the API server's message")
		}
	}
	Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(k8sClient.List(ctx, events, client.InNamespace(call.Namespace))).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(HaveField("Reason", jobexec.EventExecutionRejected),
			HaveField("Type", corev1.EventTypeWarning), HaveField("Note", ContainSubstring(refusalMessage)))))
	}).WithContext(ctx).Should(Succeed())
	expectNoJobs(ctx, call.Namespace)
}

var _ = Describe("A call Kubernetes refuses to run", Label("rejects"), func() {
	It("ends ExecutionRejected at once when its Job is Invalid", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		refuseJobs(ctx, ns, metav1.StatusReasonInvalid)
		create(ctx, echoTool(ns).Obj(), MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "x"}).Obj())
		expectRejected(ctx, waitTerminal(ctx, ns, "c"), "Invalid")
	})

	It("ends ExecutionRejected after bounded retries when its Job is Forbidden", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		refuseJobs(ctx, ns, metav1.StatusReasonForbidden)
		create(ctx, echoTool(ns).Obj(), MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "x"}).Obj())
		expectRejected(ctx, waitTerminal(ctx, ns, "c"), "Forbidden")
	})
})

var _ = Describe("Tool names that are not label values", Label("rejects"), func() {
	for _, name := range []string{"_probe", strings.Repeat("t", 64)} {
		It("run: "+name[:min(len(name), 12)], func(ctx SpecContext) {
			ns := newNamespace(ctx)
			create(ctx, MakeTool("probe", ns).Name(name).Image("example/probe:1").Command("/probe").Obj(),
				MakeToolCall("c", ns).Tool(name).Requester(AdminUser).Args(map[string]any{"text": "x"}).Obj())
			call := waitTerminal(ctx, ns, "c")
			Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
			job := &batchv1.Job{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}, job)).To(Succeed())
			Expect(job.Annotations).To(HaveKeyWithValue(podcontract.AnnotationTool, name))
			Expect(job.Labels).To(HaveKeyWithValue(podcontract.LabelTool, podspec.ToolLabelValue(name)))
		})
	}
})

var _ = Describe("Arguments with $ in them", Label("rejects"), func() {
	It("reach the body exactly as frozen, though the kubelet expands $(…) in env values", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		args := map[string]any{"cmd": "echo $$ $(HOME) $$(X) $(" + podcontract.EnvArgsDigest + ") $"}
		create(ctx, MakeTool("sh", ns).Image("example/sh:1").Command("/sh").Obj(),
			MakeToolCall("c", ns).Tool("sh").Requester(AdminUser).Args(args).Obj())
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		// The simulated body echoes the bytes it received.
		var got map[string]any
		Expect(json.Unmarshal(call.Status.Result.Content.Raw, &got)).To(Succeed())
		Expect(got).To(Equal(args))
	})
})

var _ = Describe("A refusal whose message is larger than its field", Label("rejects"), func() {
	It("still ends the call, with the message cut honestly and the full count in meta", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		big := strings.Repeat("A", 100<<10)
		create(ctx, MakeTool("lower", ns).Image("example/lower:1").Command("/lower").
			Parameters(map[string]any{"type": "object", "properties": map[string]any{
				"text":  map[string]any{"type": "string", "pattern": "^[a-z]*$"},
				"other": map[string]any{"type": "string", "pattern": "^[a-z]*$"},
			}}).Obj(),
			MakeToolCall("c", ns).Tool("lower").Requester(AdminUser).Args(map[string]any{"text": big, "other": "B"}).Obj())
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseFailed), explain(call))
		res := call.Status.Result
		Expect(res.Reason).To(Equal(string(pipeline.ReasonSchemaViolation)))
		Expect(res.Meta).To(HaveKeyWithValue(pipeline.MetaViolations, "2"))
		Expect(res.Error).To(ContainSubstring("does not match pattern '^[a-z]*$'"))
		Expect(res.Error).To(ContainSubstring("(102400 bytes)"), "the value's size is given")
		Expect(len(res.Error)).To(BeNumerically("<", 8<<10))
		Expect(call).To(HaveCondition(v1alpha1.ConditionArgumentsValid, metav1.ConditionFalse, string(pipeline.ReasonSchemaViolation)))
		expectNoJobs(ctx, ns)
	})
})

var _ = Describe("The deadline backstop", Label("rejects"), func() {
	It("ends a call whose Pod never reports, once the clock passes timeout + start allowance + grace", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("mute", Outcome{Hold: true})
		create(ctx, MakeTool("mute", ns).Image("example/mute:1").Command("/mute").Timeout(time.Minute).Obj(),
			MakeToolCall("c", ns).Tool("mute").Requester(AdminUser).Args(map[string]any{}).Obj())
		call := &v1alpha1.ToolCall{}
		Eventually(func(g Gomega) {
			job := &batchv1.Job{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}, job)).To(Succeed())
			g.Expect(job.Status.Active).To(BeNumerically("==", 1), "the Pod runs")
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, call)).To(Succeed())
			g.Expect(call).To(HavePhase(v1alpha1.PhaseRunning))
		}).WithContext(ctx).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, call)).To(Succeed())
			g.Expect(call).To(HavePhase(v1alpha1.PhaseRunning))
		}).WithContext(ctx).WithTimeout(ConsistentDuration).Should(Succeed(), "nothing ends it before its deadline")

		fakeClock.Step(time.Minute + controllers.DefaultCallOptions().Job.Allowance() + controllers.DefaultCallOptions().DeadlineGrace)
		poke(ctx, call)
		done := waitTerminal(ctx, ns, "c")
		expectFailure(done, "DeadlineExceeded")
	})
})
