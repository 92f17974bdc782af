package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// echoTool is the example echo body (cmd/tools/echo: it returns its arguments) under
// another object name and model-facing name.
func echoTool(objName, toolName string) *toolgatev1alpha1.Tool {
	return toolgatetest.MakeTool(objName, demoNS).Name(toolName).Image(toolImage).Command("/tools/echo").
		RunnerInImage("").Scratch(toolgatev1alpha1.ScratchNone).Timeout(20 * time.Second).Obj()
}

var _ = Describe("a tool name that is not a label value", Label("rejects", "labels"), func() {
	It("_probe runs on real Pods and returns its arguments; its Job's labels are valid", func(ctx SpecContext) {
		createTool(ctx, echoTool("e2e-probe", "_probe"))
		args := map[string]any{"message": "probe"}
		call := createCall(ctx, "_probe", "", args)
		got := waitTerminal(ctx, call, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", got.Status.Result)
		Expect(string(got.Status.Result.Content.Raw)).To(MatchJSON(canonicalJSON(args)))
		jobs := jobsOf(ctx, call)
		Expect(jobs).To(HaveLen(1))
		Expect(jobs[0].Annotations).To(HaveKeyWithValue(podcontract.AnnotationTool, "_probe"))
		for k, v := range jobs[0].Spec.Template.Labels {
			Expect(validation.IsValidLabelValue(v)).To(BeEmpty(), "label %s=%q", k, v)
		}
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("arguments with $ in them", Label("rejects", "frozen-args"), func() {
	It("reach the echo body exactly: $$, $(HOME) and $$(X) are not expanded by the kubelet", func(ctx SpecContext) {
		args := map[string]any{"message": "echo $$ $(HOME) $$(X) $(" + podcontract.EnvArgsDigest + ") $"}
		call := createCall(ctx, "echo", demoScope, args)
		got := waitTerminal(ctx, call, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", got.Status.Result)
		canonical := canonicalJSON(args)
		Expect(got.Status.ArgumentsDigest).To(Equal(toolgatetest.Digest(canonical)))
		Expect(string(got.Status.Result.Content.Raw)).To(MatchJSON(canonical))
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("a Job the cluster refuses", Label("rejects", "execution-rejected"), func() {
	It("ends the call Failed/ExecutionRejected, with the API server's message for operators only", func(ctx SpecContext) {
		const tool, message = "e2e-refused", "toolgate e2e: Jobs of this tool are refused"
		refuseToolJobs(ctx, tool, message)
		createTool(ctx, echoTool(tool, tool))
		call := createCall(ctx, tool, "", map[string]any{"message": "never runs"})
		got := waitTerminal(ctx, call, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
		Expect(resultReason(got)).To(Equal(toolgatev1alpha1.ReasonExecutionRejected))
		Expect(got.Status.Result.Meta).To(HaveKeyWithValue(pipeline.MetaKubernetesReason, "Invalid"))
		Expect(got.Status.Result.Error).NotTo(ContainSubstring(message))
		Expect(got).To(toolgatetest.HaveCondition(toolgatev1alpha1.ConditionExecuted, metav1.ConditionFalse, toolgatev1alpha1.ReasonExecutionRejected))
		Expect(jobsOf(ctx, call)).To(BeEmpty())
	}, SpecTimeout(2*time.Minute))
})

// refuseToolJobs installs a ValidatingAdmissionPolicy refusing (Invalid) the Jobs of one
// tool in toolgate-demo, removed when the spec ends, and waits until it is in effect.
func refuseToolJobs(ctx SpecContext, tool, message string) {
	GinkgoHelper()
	selector := map[string]string{podcontract.LabelTool: podspec.ToolLabelValue(tool)}
	probe := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-refused-probe", Namespace: demoNS, Labels: selector},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: toolImage}},
		}}},
	}
	remove, err := toolgatetest.MakeRefusal("toolgate-"+tool, "batch", "jobs", message).Reason(metav1.StatusReasonInvalid).
		InNamespace(demoNS).ObjectLabels(selector).Labels(map[string]string{e2eLabel: "true"}).Apply(ctx, admin, probe)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(remove)
}
