package gateway_test

import (
	"context"
	"net"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/gateway"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// freeAddr is a loopback address with a port nobody listens on right now.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	return addr
}

var _ = Describe("gateway.ServeHTTP", Label("serve"), func() {
	for _, version := range []string{"", legacyProtocol} {
		It("serves until its context ends, then stops and cancels the calls still in flight"+protocolLabel(version), func(ctx SpecContext) {
			ns := newNamespace(ctx)
			kubelet.Script("forever", Outcome{Hold: true})
			create(ctx, echoTool(ns).Obj(), plainTool("forever", ns).Obj())
			addr := freeAddr()
			serveCtx, stop := context.WithCancel(context.Background())
			DeferCleanup(stop)
			served := make(chan error, 1)
			_, tok := serviceAccountAgent(ctx, ns, "agent", gateway.DefaultAudience)
			go func() {
				served <- gateway.ServeHTTP(serveCtx, gateway.Options{Client: agentClient(ctx, env.Config, ns), Logger: GinkgoLogr},
					gateway.HTTPOptions{Addr: addr, Config: env.Config})
			}()

			var cs *mcp.ClientSession
			Eventually(func() error {
				var err error
				cs, err = mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "v0"}, nil).
					Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr, HTTPClient: &http.Client{Transport: bearer{tok}}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
				return err
			}).WithContext(ctx).Should(Succeed())
			// The server is gone by the end: closing (a DELETE of the session) may fail.
			DeferCleanup(func() { _ = cs.Close() })
			Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElements("echo", "forever"))
			Expect(callTool(ctx, cs, "echo", map[string]any{"text": "over the wire"}).StructuredContent).
				To(Equal(map[string]any{"text": "over the wire"}))

			go func() { _, _ = cs.CallTool(ctx, mcpCall("forever", nil)) }()
			Eventually(func() []v1alpha1.ToolCall { return toolCalls(ctx, ns) }).WithContext(ctx).WithTimeout(LongTimeout).
				Should(ContainElement(HaveField("Status.Phase", v1alpha1.PhaseRunning)))

			stop()
			Eventually(served).WithContext(ctx).Should(Receive(Succeed()))
			Eventually(func() []v1alpha1.ToolCall { return toolCalls(ctx, ns) }).WithContext(ctx).
				Should(ConsistOf(
					And(HaveField("Spec.Tool", "echo"), HaveField("Status.Phase", v1alpha1.PhaseSucceeded)),
					And(HaveField("Spec.Tool", "forever"), HaveField("Status.Phase", v1alpha1.PhaseFailed),
						HaveField("Status.Result.Reason", v1alpha1.ReasonCancelled)),
				), "the finished echo call as it was, the one in flight cancelled (and kept)")
		})
	}
})
