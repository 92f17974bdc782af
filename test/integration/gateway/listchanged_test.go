package gateway_test

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// afterNotification lists the tools once a notifications/tools/list_changed has arrived
// since the last look (nil before), so an assertion on it can only pass through a
// notification.
func afterNotification(ctx context.Context, cs *mcp.ClientSession, changed <-chan struct{}) func() map[string]*mcp.Tool {
	return func() map[string]*mcp.Tool {
		select {
		case <-changed:
			return listTools(ctx, cs)
		default:
			return nil
		}
	}
}

var _ = Describe("notifications/tools/list_changed", Label("list-changed"), func() {
	for _, tr := range transports {
		for _, version := range []string{"", legacyProtocol} {
			It("tells the client when tools are added, changed or removed, over "+string(tr)+protocolLabel(version), func(ctx SpecContext) {
				ns := newNamespace(ctx)
				create(ctx, echoTool(ns).Obj(), MakeToolScope("demo", ns).Obj())
				changed := make(chan struct{}, 64)
				cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{scope: "demo"}), tr, version, &mcp.ClientOptions{
					ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
				})
				Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("echo"))
				tools := afterNotification(ctx, cs, changed)

				By("adding a Tool")
				create(ctx, plainTool("added", ns).Scope("demo").Obj())
				Eventually(tools).WithContext(ctx).Should(HaveKey("added"))

				By("changing a Tool's description and schema")
				echo := &v1alpha1.Tool{}
				Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "echo"}, echo)).To(Succeed())
				echo.Spec.Description = "Says it back."
				echo.Spec.Parameters = nil
				Expect(k8sClient.Update(ctx, echo)).To(Succeed())
				Eventually(tools).WithContext(ctx).Should(HaveKeyWithValue("echo", And(
					HaveField("Description", "Says it back."),
					HaveField("InputSchema", Equal(map[string]any{"type": "object"})))))

				By("denying a tool in the scope")
				scope := &v1alpha1.ToolScope{}
				Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "demo"}, scope)).To(Succeed())
				scope.Spec.Deny = []string{"echo"}
				Expect(k8sClient.Update(ctx, scope)).To(Succeed())
				Eventually(tools).WithContext(ctx).Should(And(Not(BeNil()), Not(HaveKey("echo"))))

				By("deleting a Tool")
				Expect(k8sClient.Delete(ctx, plainTool("added", ns).Obj())).To(Succeed())
				Eventually(tools).WithContext(ctx).Should(And(Not(BeNil()), Not(HaveKey("added"))))
			})
		}
	}
})
