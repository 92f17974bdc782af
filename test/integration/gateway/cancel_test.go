package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("A tools/call the client cancels", Label("cancel"), func() {
	for _, tr := range transports {
		for _, version := range []string{"", legacyProtocol} {
			It("cancels its ToolCall, which stays, Failed/Cancelled, over "+string(tr)+protocolLabel(version), func(ctx SpecContext) {
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
				Eventually(func() []v1alpha1.ToolCall { return toolCalls(ctx, ns) }).WithContext(ctx).WithTimeout(LongTimeout).
					Should(ConsistOf(HaveField("Status.Phase", v1alpha1.PhaseRunning)), "the body runs")

				cancel()
				Eventually(returned).WithContext(ctx).Should(Receive(HaveOccurred()))
				expectCancelledCall(ctx, ns, agentUser)
			})
		}
	}
})

// expectCancelledCall waits until ns's one ToolCall ended Failed/Cancelled (the record
// stays, the Job is gone) and checks who asked.
func expectCancelledCall(ctx SpecContext, ns, requester string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		calls := toolCalls(ctx, ns)
		g.Expect(calls).To(HaveLen(1))
		g.Expect(calls[0].Spec.Cancel).To(BeTrue(), "cancelled, not deleted")
		g.Expect(calls[0]).To(HavePhase(v1alpha1.PhaseFailed))
		g.Expect(calls[0].Status.Result.Reason).To(Equal(v1alpha1.ReasonCancelled))
		g.Expect(calls[0].Spec.Requester).To(Equal(requester))
		jobs := &batchv1.JobList{}
		g.Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
		g.Expect(jobs.Items).To(BeEmpty(), "the Job is stopped: %v %v", calls[0].Status.Conditions, calls[0].Status.Result.Meta)
	}).WithContext(ctx).Should(Succeed())
}

func protocolLabel(version string) string {
	if version == "" {
		return ""
	}
	return " (protocol " + version + ")"
}

var _ = Describe("A stateless-protocol tools/call whose HTTP request is closed", Label("cancel"), func() {
	It("cancels its ToolCall: in that protocol the POST is the request", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("forever", Outcome{Hold: true})
		create(ctx, plainTool("forever", ns).Obj())
		g := startGateway(ctx, ns, gatewayOptions{})
		probe := connect(ctx, g, inMemory, "", nil)
		Eventually(func() []string { return toolNames(ctx, probe) }).WithContext(ctx).Should(ContainElement("forever"))
		srv := httptest.NewServer(g.HTTPHandler())
		DeferCleanup(srv.Close)

		body, err := json.Marshal(map[string]any{
			"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": "forever", "arguments": map[string]any{}, "_meta": map[string]any{
				mcp.MetaKeyProtocolVersion:    statelessProtocol,
				mcp.MetaKeyClientInfo:         map[string]any{"name": "raw", "version": "0"},
				mcp.MetaKeyClientCapabilities: map[string]any{},
			}},
		})
		Expect(err).NotTo(HaveOccurred())
		reqCtx, closeRequest := context.WithCancel(ctx)
		defer closeRequest()
		req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, srv.URL, bytes.NewReader(body))
		Expect(err).NotTo(HaveOccurred())
		for k, v := range map[string]string{
			"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": statelessProtocol, "Mcp-Method": "tools/call", "Mcp-Name": "forever",
		} {
			req.Header.Set(k, v)
		}
		answered := make(chan *http.Response, 1)
		go func() {
			resp, _ := http.DefaultClient.Do(req)
			answered <- resp
		}()
		Eventually(func() []v1alpha1.ToolCall { return toolCalls(ctx, ns) }).WithContext(ctx).WithTimeout(LongTimeout).
			Should(ConsistOf(HaveField("Status.Phase", v1alpha1.PhaseRunning)), "the body runs")
		Expect(answered).NotTo(Receive(), "no answer while the body runs")

		closeRequest()
		expectCancelledCall(ctx, ns, agentUser)
	})
})
