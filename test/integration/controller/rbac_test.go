package controller_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// bindShippedRole binds the shipped ClusterRole to user in ns; it returns the user's client.
func bindShippedRole(ctx SpecContext, ns string, role UserRole, user string) client.Client {
	c, err := env.BindUserRole(ctx, ns, role, user)
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("The shipped agent and approver roles", Label("rbac", "approval"), func() {
	It("let an agent call but not approve nor write status, and let an approver approve", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		agent := bindShippedRole(ctx, ns, AgentRole, "robot")
		approver := bindShippedRole(ctx, ns, ApproverRole, "carol")
		call := parkedCallAs(ctx, ns, agent, "robot")

		err := agent.Create(ctx, MakeToolCallApproval("c", ns).Approver("robot").For(call).Obj())
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "an agent cannot approve: %v", err)
		call.Status.Phase = v1alpha1.PhaseRunning
		err = agent.Status().Update(ctx, call)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "an agent cannot write status: %v", err)

		Expect(approver.Create(ctx, MakeToolCallApproval("c", ns).Approver("carol").For(call).Obj())).To(Succeed())
		Expect(waitTerminal(ctx, ns, "c")).To(HavePhase(v1alpha1.PhaseSucceeded))
	})
})

// parkedCallAs registers the echo tool behind an Ask policy in ns and has user (acting
// through c) call it as "c"; it returns the call once it awaits approval.
func parkedCallAs(ctx SpecContext, ns string, c client.Client, user string) *v1alpha1.ToolCall {
	GinkgoHelper()
	create(ctx, echoTool(ns).Obj(),
		MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).VerdictRule("always", "true", v1alpha1.VerdictAsk).Obj())
	Expect(c.Create(ctx, MakeToolCall("c", ns).Tool("echo").Requester(user).Args(map[string]any{"text": "x"}).Obj())).To(Succeed())
	call := &v1alpha1.ToolCall{}
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, call)).To(Succeed())
		g.Expect(call).To(HavePhase(v1alpha1.PhaseAwaitingApproval))
	}).WithContext(ctx).Should(Succeed())
	return call
}
