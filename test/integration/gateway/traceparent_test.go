package gateway_test

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

var _ = Describe("tools/call with a trace context", Label("call", "tracing"), func() {
	It("puts _meta.traceparent on the ToolCall, and drops a malformed one", func(ctx SpecContext) {
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{}), transports[0], "", nil)
		Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("echo"))

		for value, want := range map[string]string{tp: tp, "not-a-traceparent": ""} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"},
				Meta: mcp.Meta{"traceparent": value}})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.IsError).To(BeFalse(), text(res))
			if want == "" {
				Expect(callOf(ctx, ns, res).Annotations).NotTo(HaveKey(v1alpha1.AnnotationTraceparent))
				continue
			}
			Expect(callOf(ctx, ns, res).Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationTraceparent, want))
		}
	})
})
