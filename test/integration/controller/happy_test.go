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
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("A call that succeeds", Label("happy"), func() {
	It("walks every stage in order, runs one Job with the frozen arguments and freezes the result", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), MakeToolCall("hello", ns).Tool("echo").Requester(AdminUser).
			Args([]byte(`{ "text": "hi",  "b": {"y": 2, "x": [1, true, null]}, "a": 1.5 }`)).Obj())

		call := waitTerminal(ctx, ns, "hello")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(call).To(HaveVerdict(v1alpha1.VerdictAllow))
		Expect(conditionTypes(call.Status.Conditions)).To(Equal([]string{
			v1alpha1.ConditionResolved, v1alpha1.ConditionArgumentsFrozen, v1alpha1.ConditionArgumentsValid,
			v1alpha1.ConditionAdmitted, v1alpha1.ConditionGuarded, v1alpha1.ConditionExecuted,
			v1alpha1.ConditionResultAccepted, v1alpha1.ConditionNormalized, v1alpha1.ConditionCompleted,
		}))
		for _, c := range call.Status.Conditions {
			Expect(c.Status).To(Equal(metav1.ConditionTrue), "condition %s: %s", c.Type, c.Message)
		}
		// Keys sorted, whitespace gone: the bytes the body receives and the digest covers.
		canonical := `{"a":1.5,"b":{"x":[1,true,null],"y":2},"text":"hi"}`
		Expect(call.Status.ArgumentsDigest).To(Equal(Digest([]byte(canonical))))
		Expect(call.Status.Result.OK).To(BeTrue())
		Expect(call.Status.Result.IsError).To(BeFalse())
		var content map[string]any
		Expect(json.Unmarshal(call.Status.Result.Content.Raw, &content)).To(Succeed())
		Expect(content).To(HaveKeyWithValue("text", "hi"))
		Expect(call.Status.ResultDigest).To(HavePrefix("sha256:"))
		Expect(call.Status.Duration).NotTo(BeEmpty())

		jobs := &batchv1.JobList{}
		Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
		Expect(jobs.Items).To(HaveLen(1))
		job := jobs.Items[0]
		Expect(job.Name).To(Equal(podspec.JobName("hello", 1)))
		Expect(metav1.IsControlledBy(&job, call)).To(BeTrue())
		env := map[string]string{}
		for _, e := range containerNamed(job.Spec.Template.Spec, podcontract.SignerContainerName).Env {
			env[e.Name] = e.Value
		}
		Expect(env).To(HaveKeyWithValue(podcontract.EnvArgs, canonical))
		Expect(env).To(HaveKeyWithValue(podcontract.EnvArgsDigest, call.Status.ArgumentsDigest))
	})
})
