package gateway_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/pkg/agentclient"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("tools/call", Label("call"), func() {
	for _, tr := range transports {
		Context("over "+string(tr), func() {
			It("runs the call as the gateway's identity and returns the result, structured when it is an object", func(ctx SpecContext) {
				ns := newNamespace(ctx)
				create(ctx, echoTool(ns).Obj())
				cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{session: "chat-1"}), tr, "", nil)
				Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("echo"))

				res := callTool(ctx, cs, "echo", map[string]any{"text": "hi"})
				Expect(res.IsError).To(BeFalse(), text(res))
				Expect(text(res)).To(MatchJSON(`{"text":"hi"}`))
				Expect(res.StructuredContent).To(Equal(map[string]any{"text": "hi"}))

				call := callOf(ctx, ns, res)
				Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded))
				Expect(call.Spec.Requester).To(Equal(agentUser))
				Expect(call.Spec.Session).To(Equal("chat-1"))
				Expect(call.Labels).To(HaveKeyWithValue(agentclient.LabelCreatedBy, gateway.CreatedBy))
				Expect(res.Meta).To(HaveKeyWithValue(gateway.MetaPhase, "Succeeded"))
				Expect(res.Meta).To(HaveKeyWithValue(gateway.MetaReason, "Succeeded"))
			})

			It("returns a failing body as an isError result with the message", func(ctx SpecContext) {
				ns := newNamespace(ctx)
				kubelet.Script("crash", Outcome{ExitCode: 3, Stderr: "disk full"})
				create(ctx, plainTool("crash", ns).Obj())
				cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{}), tr, "", nil)
				Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("crash"))

				res := callTool(ctx, cs, "crash", nil)
				Expect(res.IsError).To(BeTrue())
				Expect(text(res)).To(And(ContainSubstring("code 3"), ContainSubstring("disk full")))
				Expect(res.StructuredContent).To(BeNil())
				Expect(callOf(ctx, ns, res)).To(HavePhase(v1alpha1.PhaseFailed))
			})

			It("passes a schema violation through as an isError result listing it", func(ctx SpecContext) {
				ns := newNamespace(ctx)
				create(ctx, echoTool(ns).Obj())
				cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{}), tr, "", nil)
				Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("echo"))

				res := callTool(ctx, cs, "echo", map[string]any{"text": 5})
				Expect(res.IsError).To(BeTrue())
				Expect(text(res)).To(ContainSubstring("/text"))
				Expect(res.Meta).To(HaveKeyWithValue(gateway.MetaReason, "SchemaViolation"))
				Expect(callOf(ctx, ns, res)).To(HavePhase(v1alpha1.PhaseFailed))
			})

			It("returns a policy's denial as an isError result with the rule's message", func(ctx SpecContext) {
				ns := newNamespace(ctx)
				create(ctx, echoTool(ns).Obj(),
					MakeToolPolicy("no-prod", ns).Stage(v1alpha1.StagePreExecute).Rule(v1alpha1.PolicyRule{
						Name: "prod", Expression: `arguments.text == "prod"`, Verdict: v1alpha1.VerdictDeny,
						Message: "production is off limits",
					}).Obj())
				cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{}), tr, "", nil)
				Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("echo"))

				res := callTool(ctx, cs, "echo", map[string]any{"text": "prod"})
				Expect(res.IsError).To(BeTrue())
				Expect(text(res)).To(ContainSubstring("production is off limits"))
				Expect(callOf(ctx, ns, res)).To(HavePhase(v1alpha1.PhaseDenied))
			})

			It("returns at once for a call awaiting approval, naming it, and leaves it parked", func(ctx SpecContext) {
				ns := newNamespace(ctx)
				create(ctx, echoTool(ns).Obj(),
					MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).VerdictRule("always", "true", v1alpha1.VerdictAsk).Obj())
				cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{}), tr, "", nil)
				Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("echo"))

				res := callTool(ctx, cs, "echo", map[string]any{"text": "deploy"})
				Expect(res.IsError).To(BeTrue())
				call := callOf(ctx, ns, res)
				Expect(text(res)).To(And(ContainSubstring("approval"), ContainSubstring(call.Name),
					ContainSubstring("toolgate approve "+call.Name+" -n "+ns)))
				Expect(call).To(HavePhase(v1alpha1.PhaseAwaitingApproval))
				Expect(res.Meta).To(HaveKeyWithValue(gateway.MetaReason, gateway.ReasonAwaitingApproval))
				Consistently(func() []v1alpha1.ToolCall { return toolCalls(ctx, ns) }).WithContext(ctx).
					WithTimeout(ConsistentDuration).Should(ConsistOf(HaveField("Name", call.Name)))
			})

			It("refuses an unknown tool with a JSON-RPC invalid-params error and creates no call", func(ctx SpecContext) {
				ns := newNamespace(ctx)
				create(ctx, echoTool(ns).Obj())
				cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{}), tr, "", nil)
				_, err := cs.CallTool(ctx, mcpCall("nope", nil))
				Expect(err).To(MatchError(ContainSubstring("unknown tool")))
				Expect(rpcCode(err)).To(BeEquivalentTo(-32602))
				Expect(toolCalls(ctx, ns)).To(BeEmpty())
			})
		})
	}

	It("returns 'still running' with the call's name after the wait bound, and leaves the call running", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("slow", Outcome{Hold: true})
		create(ctx, plainTool("slow", ns).Obj())
		cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{waitBound: 2 * time.Second}), inMemory, "", nil)
		Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("slow"))

		res := callTool(ctx, cs, "slow", nil)
		Expect(res.IsError).To(BeTrue())
		call := callOf(ctx, ns, res)
		Expect(text(res)).To(And(ContainSubstring("still running"), ContainSubstring(call.Name)))
		Expect(call.Status.Phase.IsTerminal()).To(BeFalse(), "phase %s", call.Status.Phase)
		Expect(res.Meta).To(HaveKeyWithValue(gateway.MetaReason, gateway.ReasonStillRunning))
	})
})
