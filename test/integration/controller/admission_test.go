package controller_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// expectNoJobs asserts that no Job exists in the namespace, now and for a while.
func expectNoJobs(ctx SpecContext, ns string) {
	Consistently(func(g Gomega) {
		jobs := &batchv1.JobList{}
		g.Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
		g.Expect(jobs.Items).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(ConsistentDuration).Should(Succeed())
}

var _ = Describe("A call whose arguments violate the schema", Label("admission"), func() {
	It("fails with every violation listed, runs no policy and creates no Job", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(),
			MakeToolPolicy("deny-all", ns).Stage(v1alpha1.StagePreExecute).VerdictRule("all", "true", v1alpha1.VerdictDeny).Obj(),
			MakeToolCall("bad", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": 5, "extra": true}).Obj())
		call := waitTerminal(ctx, ns, "bad")
		Expect(call).To(HavePhase(v1alpha1.PhaseFailed), explain(call))
		Expect(call.Status.Result.IsError).To(BeTrue())
		Expect(call.Status.Result.Reason).To(Equal("SchemaViolation"))
		Expect(call.Status.Result.Error).To(ContainSubstring("/text"))
		Expect(call).To(HaveCondition(v1alpha1.ConditionArgumentsValid, metav1.ConditionFalse, "SchemaViolation"))
		Expect(call.Status.Conditions).NotTo(ContainElement(HaveField("Type", v1alpha1.ConditionAdmitted)),
			"no policy may run after a schema violation")
		expectNoJobs(ctx, ns)
	})
})

var _ = Describe("A call denied by a pre-execute policy", Label("admission", "policy"), func() {
	It("is Denied with the rule's message, and creates no Job", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(),
			MakeToolPolicy("no-secrets", ns).Stage(v1alpha1.StagePreExecute).Rule(v1alpha1.PolicyRule{
				Name: "secret", Expression: `arguments.text.contains("secret")`, Verdict: v1alpha1.VerdictDeny,
				Message: "do not ask for secrets"}).Obj(),
			MakeToolCall("leak", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "the secret"}).Obj())
		call := waitTerminal(ctx, ns, "leak")
		Expect(call).To(HavePhase(v1alpha1.PhaseDenied), explain(call))
		Expect(call).To(HaveVerdict(v1alpha1.VerdictDeny))
		Expect(call).To(HaveCondition(v1alpha1.ConditionAdmitted, metav1.ConditionFalse, "PolicyDenied"))
		Expect(call.Status.Result.Error).To(Equal("do not ask for secrets"))
		Expect(call.Status.Result.Error).NotTo(ContainSubstring("no-secrets"), "policy names stay out of the result")
		expectNoJobs(ctx, ns)
	})

	It("denies (fail closed) when a rule cannot be evaluated, and reports the policy not Ready", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(),
			MakeToolPolicy("broken", ns).Stage(v1alpha1.StagePreExecute).VerdictRule("r", "arguments.nosuchfield == 1", v1alpha1.VerdictAllow).Obj(),
			MakeToolPolicy("bad-syntax", ns).Stage(v1alpha1.StageGuard).VerdictRule("r", "((", v1alpha1.VerdictAllow).Obj(),
			MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "x"}).Obj())
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseDenied), explain(call))
		Expect(call.Status.Result.Reason).To(Equal("PolicyError"))
		Eventually(func(g Gomega) {
			p := &v1alpha1.ToolPolicy{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bad-syntax"}, p)).To(Succeed())
			g.Expect(p.Status.Conditions).To(ContainElement(And(
				HaveField("Type", v1alpha1.ConditionReady), HaveField("Status", metav1.ConditionFalse),
				HaveField("Reason", v1alpha1.ReasonPolicyCompileError))))
		}).WithContext(ctx).Should(Succeed())
	})
})

var _ = Describe("A guard", Label("admission", "policy"), func() {
	It("lowers an Allow to a Deny, whatever the pre-execute policies said", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(),
			MakeToolPolicy("allow-all", ns).Stage(v1alpha1.StagePreExecute).VerdictRule("all", "true", v1alpha1.VerdictAllow).Obj(),
			MakeToolPolicy("no-rm", ns).Stage(v1alpha1.StageGuard).Rule(v1alpha1.PolicyRule{
				Name: "rm", Expression: `arguments.text.startsWith("rm -rf")`, Verdict: v1alpha1.VerdictDeny,
				Message: "destructive commands are not allowed"}).Obj(),
			MakeToolCall("rm", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "rm -rf /"}).Obj(),
			MakeToolCall("ls", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "ls"}).Obj())
		call := waitTerminal(ctx, ns, "rm")
		Expect(call).To(HavePhase(v1alpha1.PhaseDenied), explain(call))
		Expect(call).To(HaveCondition(v1alpha1.ConditionAdmitted, metav1.ConditionTrue, ""))
		Expect(call).To(HaveCondition(v1alpha1.ConditionGuarded, metav1.ConditionFalse, "GuardDenied"))
		Expect(waitTerminal(ctx, ns, "ls")).To(HavePhase(v1alpha1.PhaseSucceeded))
	})
})
