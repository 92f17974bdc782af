package controller_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("Post-execute policies see the tool admission saw", Label("postexecute"), func() {
	It("redact a result by a rule keyed on the tool's annotation, even after the Tool lost it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("classified", Outcome{Hold: true})
		create(ctx, MakeTool("classified", ns).Image("example/classified:1").Command("/classified").
			Annotation("sensitivity", "secret").Obj(),
			MakeToolPolicy("secret-results", ns).Stage(v1alpha1.StagePostExecute).
				ActionRule("sensitive", `tool.annotations[?"sensitivity"].orValue("") == "secret"`, v1alpha1.ActionRedact, `"[redacted]"`).Obj(),
			MakeToolCall("c", ns).Tool("classified").Requester(AdminUser).Args(map[string]any{}).Obj())
		job := &batchv1.Job{}
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}, job)
		}).WithContext(ctx).Should(Succeed())

		// The call was admitted with the annotation: removing it now changes nothing for it.
		tool := &v1alpha1.Tool{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "classified"}, tool)).To(Succeed())
		delete(tool.Annotations, "sensitivity")
		Expect(k8sClient.Update(ctx, tool)).To(Succeed())

		finish(ctx, ns, job.Name, Outcome{Stdout: []byte(`{"plans":"the launch codes"}`)})
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		var content any
		Expect(json.Unmarshal(call.Status.Result.Content.Raw, &content)).To(Succeed())
		Expect(content).To(Equal("[redacted]"), explain(call))
		Expect(call.Status.Result.Meta).To(HaveKeyWithValue("redacted", "true"))
		Expect(call.Status.Tool.Annotations).To(HaveKeyWithValue("sensitivity", "secret"))
		Expect(call).To(HaveCondition(v1alpha1.ConditionResultAccepted, metav1.ConditionTrue, "ResultRedacted"))
	})

	It("refuse a call whose tool's output schema does not compile before its body runs", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeTool("untyped", ns).Image("example/untyped:1").Command("/untyped").
			Output(map[string]any{"type": 12}).Obj(),
			MakeToolCall("c", ns).Tool("untyped").Requester(AdminUser).Args(map[string]any{}).Obj())
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseFailed), explain(call))
		Expect(call.Status.Result.Reason).To(Equal("ToolNotReady"))
		Expect(call.Status.Result.Error).To(ContainSubstring("output schema"))
		jobs := &batchv1.JobList{}
		Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
		Expect(jobs.Items).To(BeEmpty(), "no body runs for a result that could not be checked")
	})
})
