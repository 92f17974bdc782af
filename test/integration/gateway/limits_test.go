package gateway_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/gateway"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("The HTTP gateway's limits count users, not tokens", Label("http", "auth", "limits"), func() {
	It("gives two tokens of one ServiceAccount one identity slot and one limit on calls in flight", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("hold", Outcome{Hold: true})
		create(ctx, plainTool("hold", ns).Obj())
		user, first := serviceAccountAgent(ctx, ns, "agent-t", gateway.DefaultAudience)
		second := token(ctx, ns, "agent-t", gateway.DefaultAudience)
		Expect(second).NotTo(Equal(first), "a freshly minted token")
		url, s := startAuthServer(ctx, ns, "", gateway.HTTPOptions{MaxCalls: 1})

		a := connectToken(ctx, url, first, "")
		Eventually(func() []string { return toolNames(ctx, a) }).WithContext(ctx).Should(ContainElement("hold"))
		callCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { _, _ = a.CallTool(callCtx, mcpCall("hold", map[string]any{"token": "first"})) }()
		Eventually(func() []v1alpha1.ToolCall { return toolCalls(ctx, ns) }).WithContext(ctx).Should(HaveLen(1))

		By("the second token is the same user: its call finds the one slot taken")
		b := connectToken(ctx, url, second, "")
		res := callTool(ctx, b, "hold", map[string]any{"token": "second"})
		Expect(res.IsError).To(BeTrue(), text(res))
		Expect(text(res)).To(ContainSubstring(user + " has 1 calls in flight"))
		Expect(res.Meta).To(refusedFor(gateway.ReasonInFlightLimit))
		Expect(toolCalls(ctx, ns)).To(HaveLen(1), "no ToolCall for the call beyond the limit")
		Expect(s.Identities()).To(Equal(1), "one user, one identity slot")
	})

	It("bounds the calls a user leaves awaiting approval, across tokens, until a person answers one", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(),
			MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).VerdictRule("always", "true", v1alpha1.VerdictAsk).Obj())
		user, first := serviceAccountAgent(ctx, ns, "agent-p", gateway.DefaultAudience)
		url := startAuthGateway(ctx, ns, "", gateway.HTTPOptions{MaxCalls: 4, MaxParked: 2})
		a := connectToken(ctx, url, first, "")
		Eventually(func() []string { return toolNames(ctx, a) }).WithContext(ctx).Should(ContainElement("echo"))

		var parked []*v1alpha1.ToolCall
		for _, t := range []string{"one", "two"} {
			res := callTool(ctx, a, "echo", map[string]any{"text": t})
			Expect(text(res)).To(ContainSubstring("An approver can allow it"), "the call parks")
			parked = append(parked, callOf(ctx, ns, res))
		}
		By("a third call, with a fresh token of the same ServiceAccount, is refused before any ToolCall")
		b := connectToken(ctx, url, token(ctx, ns, "agent-p", gateway.DefaultAudience), "")
		res := callTool(ctx, b, "echo", map[string]any{"text": "three"})
		Expect(res.IsError).To(BeTrue())
		Expect(text(res)).To(ContainSubstring(user + " has 2 calls awaiting approval"))
		Expect(res.Meta).To(refusedFor(gateway.ReasonParkedLimit))
		Expect(toolCalls(ctx, ns)).To(HaveLen(2))

		By("a person denies one: there is room again")
		create(ctx, MakeToolCallApproval(parked[0].Name, ns).For(parked[0]).Deny().Reason("no").Obj())
		Eventually(func() string {
			return text(callTool(ctx, b, "echo", map[string]any{"text": "again"}))
		}).WithContext(ctx).Should(ContainSubstring("An approver can allow it"))
		Expect(toolCalls(ctx, ns)).To(HaveLen(3))
	})
})
