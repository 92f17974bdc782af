package controller_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/toolcall"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("Retries", Label("retry"), func() {
	It("run each attempt as its own Job and record every attempt", func(ctx SpecContext) {
		call := runScripted(ctx, "flaky", Outcome{ExitCode: 137, Reason: "OOMKilled", NoFrame: true},
			func(w *ToolWrapper) { w.Retry(3, "OOMKilled") })
		expectFailure(call, "OOMKilled")
		Expect(call.Status.Attempts).To(HaveLen(3))
		for i, a := range call.Status.Attempts {
			Expect(a.Attempt).To(BeNumerically("==", i+1))
			Expect(a.JobName).To(Equal(podspec.JobName("c", int32(i+1))))
			Expect(a.Reason).To(Equal("OOMKilled"))
		}
		jobs := &batchv1.JobList{}
		Expect(k8sClient.List(ctx, jobs, client.InNamespace(call.Namespace))).To(Succeed())
		Expect(jobs.Items).To(HaveLen(3))
	})

	It("do not retry a reason the policy does not name", func(ctx SpecContext) {
		call := runScripted(ctx, "once", Outcome{ExitCode: 2}, func(w *ToolWrapper) { w.Retry(3, "OOMKilled") })
		expectFailure(call, "NonZeroExit")
		Expect(call.Status.Attempts).To(HaveLen(1))
	})
})

var _ = Describe("A tool edited after a call was admitted", Label("snapshot"), func() {
	It("does not change the call: it runs the body it was admitted with", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("edited", Outcome{Hold: true})
		create(ctx, MakeTool("edited", ns).Image("example/v1:1").Command("/v1").Obj(),
			MakeToolCall("c", ns).Tool("edited").Requester(AdminUser).Args(map[string]any{}).Obj())
		job := &batchv1.Job{}
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}, job)
		}).WithContext(ctx).Should(Succeed())
		tool := &v1alpha1.Tool{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edited"}, tool)).To(Succeed())
		tool.Spec.Body.Image = "example/v2:1"
		Expect(k8sClient.Update(ctx, tool)).To(Succeed())
		Expect(k8sClient.Delete(ctx, tool)).To(Succeed())
		finish(ctx, ns, job.Name, Outcome{Echo: true})
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(call.Status.Tool.Spec.Body.Image).To(Equal("example/v1:1"))
		Expect(containerNamed(job.Spec.Template.Spec, podcontract.ToolContainerName).Image).To(Equal("example/v1:1"))
	})
})

var _ = Describe("Post-execute policies and the output schema", Label("postexecute"), func() {
	It("block a result with feedback for the model", func(ctx SpecContext) {
		call := runScripted(ctx, "leaky", Outcome{Stdout: []byte(`{"token":"s3cr3t"}`)}, func(w *ToolWrapper) {})
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), "no policy yet: "+explain(call))

		ns := newNamespace(ctx)
		kubelet.Script("leaky", Outcome{Stdout: []byte(`{"token":"s3cr3t"}`)})
		create(ctx, MakeTool("leaky", ns).Image("example/leaky:1").Command("/leaky").Obj(),
			MakeToolPolicy("no-tokens", ns).Stage(v1alpha1.StagePostExecute).Rule(v1alpha1.PolicyRule{
				Name: "token", Expression: `has(result.content.token)`, Action: v1alpha1.ActionBlock,
				Message: "the result contained a credential and was withheld"}).Obj(),
			MakeToolCall("c", ns).Tool("leaky").Requester(AdminUser).Args(map[string]any{}).Obj())
		blocked := waitTerminal(ctx, ns, "c")
		Expect(blocked).To(HavePhase(v1alpha1.PhaseFailed), explain(blocked))
		Expect(blocked.Status.Result.Reason).To(Equal("ResultBlocked"))
		Expect(string(blocked.Status.Result.Content.Raw)).NotTo(ContainSubstring("s3cr3t"))
		Expect(blocked.Status.Result.Error).To(ContainSubstring("withheld"))
	})

	It("redact a result with the policy's replacement", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("redactme", Outcome{Stdout: []byte(`{"user":"bob","ssn":"123-45-6789"}`)})
		create(ctx, MakeTool("redactme", ns).Image("example/r:1").Command("/r").Obj(),
			MakeToolPolicy("pii", ns).Stage(v1alpha1.StagePostExecute).
				ActionRule("ssn", `has(result.content.ssn)`, v1alpha1.ActionRedact, `{"user": result.content.user, "ssn": "[redacted]"}`).Obj(),
			MakeToolCall("c", ns).Tool("redactme").Requester(AdminUser).Args(map[string]any{}).Obj())
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		var content map[string]any
		Expect(json.Unmarshal(call.Status.Result.Content.Raw, &content)).To(Succeed())
		Expect(content).To(Equal(map[string]any{"user": "bob", "ssn": "[redacted]"}))
		Expect(call.Status.Result.Meta).To(HaveKeyWithValue("redacted", "true"))
	})

	It("fail a result that violates the tool's output schema", func(ctx SpecContext) {
		call := runScripted(ctx, "typed", Outcome{Stdout: []byte(`{"count":"many"}`)}, func(w *ToolWrapper) {
			w.Output(map[string]any{"type": "object", "properties": map[string]any{"count": map[string]any{"type": "integer"}}})
		})
		Expect(call).To(HavePhase(v1alpha1.PhaseFailed), explain(call))
		Expect(call.Status.Result.Reason).To(Equal("OutputSchemaViolation"))
	})
})

var _ = Describe("The audit chain", Label("events"), func() {
	It("records CallAdmitted before the Job and ResultFrozen after the result", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "x"}).Obj())
		Expect(waitTerminal(ctx, ns, "c")).To(HavePhase(v1alpha1.PhaseSucceeded))
		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			reasons := map[string]string{}
			for _, e := range events.Items {
				if e.Regarding.Name == "c" {
					reasons[e.Reason] = e.Type
				}
			}
			g.Expect(reasons).To(HaveKeyWithValue(toolcall.EventCallAdmitted, corev1.EventTypeNormal))
			g.Expect(reasons).To(HaveKeyWithValue(toolcall.EventResultFrozen, corev1.EventTypeNormal))
		}).WithContext(ctx).Should(Succeed())
	})
})

var _ = Describe("An operator restarted mid-call", Label("restart"), func() {
	It("resumes: the call completes once and no attempt gets a second Job", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("long", Outcome{Hold: true})
		create(ctx, MakeTool("long", ns).Image("example/long:1").Command("/long").Obj(),
			MakeToolCall("c", ns).Tool("long").Requester(AdminUser).Args(map[string]any{}).Obj())
		jobName := podspec.JobName("c", 1)
		Eventually(func(g Gomega) {
			job := &batchv1.Job{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobName}, job)).To(Succeed())
			g.Expect(job.Status.Active).To(BeNumerically("==", 1), "the Pod runs")
		}).WithContext(ctx).Should(Succeed())
		// This namespace's starts only: specs running alongside start Pods of their own.
		startsHere := func() int {
			n := 0
			for _, s := range kubelet.PodStarts() {
				if s.Namespace == ns {
					n++
				}
			}
			return n
		}
		podsBefore := startsHere()

		Expect(mgr.Stop()).To(Succeed())
		startManager()

		finish(ctx, ns, jobName, Outcome{Echo: true})
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(call.Status.Attempts).To(HaveLen(1))
		jobs := &batchv1.JobList{}
		Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
		Expect(jobs.Items).To(HaveLen(1))
		Expect(startsHere()).To(Equal(podsBefore), "no second Pod for the attempt")
	})
})
