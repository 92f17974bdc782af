package gateway_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("A tools/call the client cancels", Label("cancel"), func() {
	for _, tr := range transports {
		for _, version := range []string{"", legacyProtocol} {
			It("deletes its ToolCall over "+string(tr)+protocolLabel(version), func(ctx SpecContext) {
				ns := newNamespace(ctx)
				kubelet.Script("forever", Outcome{Hold: true})
				create(ctx, plainTool("forever", ns).Obj())
				cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{}), tr, version, nil)
				Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("forever"))

				callCtx, cancel := context.WithCancel(ctx)
				defer cancel()
				returned := make(chan error, 1)
				go func() {
					defer GinkgoRecover()
					_, err := cs.CallTool(callCtx, mcpCall("forever", nil))
					returned <- err
				}()
				Eventually(func() []v1alpha1.ToolCall { return toolCalls(ctx, ns) }).WithContext(ctx).
					Should(ConsistOf(HaveField("Status.Phase", v1alpha1.PhaseRunning)), "the body runs")

				cancel()
				Eventually(returned).WithContext(ctx).Should(Receive(HaveOccurred()))
				Eventually(func() []v1alpha1.ToolCall { return toolCalls(ctx, ns) }).WithContext(ctx).Should(BeEmpty())
			})
		}
	}
})

func protocolLabel(version string) string {
	if version == "" {
		return ""
	}
	return " (protocol " + version + ")"
}
