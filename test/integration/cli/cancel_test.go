package cli_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/cli"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("toolgate cancel", Label("cancel"), func() {
	It("cancels the requester's own call, which ends Failed/Cancelled and stays; another agent is refused", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		bindShippedRole(ctx, ns, AgentRole, "robot")
		bindShippedRole(ctx, ns, AgentRole, "nobody")
		create(ctx, echoTool(ns).Obj(), MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).
			VerdictRule("always", "true", v1alpha1.VerdictAsk).Obj())
		r := toolgate(ctx, "robot", ns, "", "call", "echo", "text=x")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		call := onlyCall(ctx, ns, v1alpha1.PhaseAwaitingApproval)

		r = toolgate(ctx, "nobody", ns, "", "cancel", call.Name)
		Expect(r.Code).To(Equal(cli.ExitForbidden), r.ErrOut)
		Expect(r.ErrOut).To(ContainSubstring("you may not cancel toolcalls.toolgate.dev " + call.Name))
		Expect(r.ErrOut).To(ContainSubstring("only the call's requester (robot) or a user granted the verb cancel"))

		r = toolgate(ctx, "robot", ns, "", "cancel", call.Name, "--wait")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		Expect(r.Out).To(Equal("Cancelled call " + call.Name + " as robot.\ncall " + call.Name + " ended Failed (Cancelled)\n"))
		ended := onlyCall(ctx, ns, v1alpha1.PhaseFailed)
		Expect(ended.Status.Result.Reason).To(Equal(v1alpha1.ReasonCancelled))
		Expect(ended.Spec.Cancel).To(BeTrue())

		r = toolgate(ctx, "robot", ns, "", "cancel", call.Name)
		Expect(r.Code).To(Equal(cli.ExitFailure))
		Expect(r.ErrOut).To(ContainSubstring("already ended Failed (Cancelled): its result stays"))
	})
})
