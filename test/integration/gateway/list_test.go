package gateway_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("tools/list", Label("list"), func() {
	for _, tr := range transports {
		It("serves the tools the scope sees over "+string(tr)+", with their schemas and hints", func(ctx SpecContext) {
			ns := newNamespace(ctx)
			create(ctx,
				MakeToolScope("demo", ns).Deny("secret").Obj(),
				echoTool(ns).ReadOnly(true).Network(v1alpha1.NetworkEgress).
					Output(map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}).Obj(),
				plainTool("secret", ns).Obj(),
				plainTool("scoped", ns).Scope("demo").Obj(),
				plainTool("elsewhere", ns).Scope("other").Obj(),
				MakeToolScope("other", ns).Obj(),
			)
			cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{scope: "demo"}), tr, "", nil)

			Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).
				Should(ContainElements("echo", "scoped"))
			tools := listTools(ctx, cs)
			Expect(tools).NotTo(HaveKey("secret"), "denied by the scope")
			Expect(tools).NotTo(HaveKey("elsewhere"), "registered in another scope")

			echo := tools["echo"]
			Expect(echo.Description).To(Equal("Returns its arguments."))
			Expect(echo.InputSchema).To(Equal(map[string]any{
				"type":       "object",
				"properties": map[string]any{"text": map[string]any{"type": "string", "maxLength": 100.0}},
				"required":   []any{"text"},
			}))
			Expect(echo.OutputSchema).To(Equal(map[string]any{
				"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}},
			}))
			Expect(echo.Annotations).NotTo(BeNil())
			Expect(echo.Annotations.ReadOnlyHint).To(BeTrue())
			Expect(echo.Annotations.DestructiveHint).To(HaveValue(BeFalse()))
			Expect(echo.Annotations.OpenWorldHint).To(HaveValue(BeTrue()))

			scoped := tools["scoped"]
			Expect(scoped.InputSchema).To(Equal(map[string]any{"type": "object"}), "no parameters: any object")
			Expect(scoped.OutputSchema).To(BeNil())
			Expect(scoped.Annotations.ReadOnlyHint).To(BeFalse())
			Expect(scoped.Annotations.OpenWorldHint).To(HaveValue(BeFalse()))
		})
	}

	It("serves the namespace layer when no scope is set", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeToolScope("demo", ns).Obj(), echoTool(ns).Obj(), plainTool("scoped", ns).Scope("demo").Obj())
		cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{}), inMemory, "", nil)
		Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("echo"))
		Expect(toolNames(ctx, cs)).NotTo(ContainElement("scoped"))
	})

	It("refuses to start for a scope that does not exist", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		ac := agentClient(ctx, agentCfg, ns)
		_, err := newGateway(ac, gatewayOptions{scope: "nope"})
		Expect(err).To(MatchError(ContainSubstring(`scope "nope"`)))
	})
})
