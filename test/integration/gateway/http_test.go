package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// rpcReply is one HTTP exchange with the gateway: the status and the JSON-RPC message
// in the body (plain JSON or the first event of an event stream).
type rpcReply struct {
	status  int
	session string
	msg     map[string]any
	text    string // a body that is not JSON
}

func post(ctx SpecContext, url, session, body string) rpcReply {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", legacyProtocol)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	reply := rpcReply{status: resp.StatusCode, session: resp.Header.Get("Mcp-Session-Id")}
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "text/event-stream"):
		Expect(json.Unmarshal(firstEventData(raw), &reply.msg)).To(Succeed(), "body %q", raw)
	case strings.HasPrefix(ct, "application/json"):
		Expect(json.Unmarshal(raw, &reply.msg)).To(Succeed(), "body %q", raw)
	default:
		reply.text = string(raw)
	}
	return reply
}

func firstEventData(stream []byte) []byte {
	sc := bufio.NewScanner(bytes.NewReader(stream))
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return []byte(data)
		}
	}
	return nil
}

func rpcError(code float64) OmegaMatcher {
	return HaveKeyWithValue("error", HaveKeyWithValue("code", code))
}

var _ = Describe("Malformed JSON-RPC over HTTP", Label("http"), func() {
	It("gets JSON-RPC errors, and the gateway keeps serving", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		g := startGateway(ctx, ns, gatewayOptions{})
		srv := httptest.NewServer(g.HTTPHandler())
		DeferCleanup(srv.Close)
		probe := connect(ctx, g, inMemory, "", nil)
		Eventually(func() []string { return toolNames(ctx, probe) }).WithContext(ctx).Should(ContainElement("echo"))

		By("a body that is not JSON: parse error")
		reply := post(ctx, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"`)
		Expect(reply.status).To(Equal(http.StatusBadRequest))
		Expect(reply.msg).To(And(rpcError(-32700), HaveKeyWithValue("id", BeNil())))

		By("JSON that is not JSON-RPC: invalid request")
		reply = post(ctx, srv.URL, "", `{"jsonrpc":"1.0","id":1,"method":"tools/list"}`)
		Expect(reply.status).To(Equal(http.StatusBadRequest))
		Expect(reply.msg).To(rpcError(-32600))

		By("a session's bad requests: invalid params and an unknown method")
		reply = post(ctx, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+legacyProtocol+`","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
		Expect(reply.status).To(Equal(http.StatusOK), "%v", reply.msg)
		Expect(reply.session).NotTo(BeEmpty())
		session := reply.session
		Expect(post(ctx, srv.URL, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).status).To(Equal(http.StatusAccepted))
		Expect(post(ctx, srv.URL, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"echo"}`).msg).To(rpcError(-32602))
		// An unknown method is the SDK's to refuse: a plain HTTP 400 in this protocol era
		// (a JSON-RPC -32601 in the stateless one).
		reply = post(ctx, srv.URL, session, `{"jsonrpc":"2.0","id":3,"method":"tools/frobnicate","params":{}}`)
		Expect(reply.status).To(Equal(http.StatusBadRequest))
		Expect(reply.text).To(ContainSubstring("tools/frobnicate"))
		reply = post(ctx, srv.URL, session, `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{}}`)
		Expect(reply.msg).To(HaveKeyWithValue("result", HaveKeyWithValue("tools", ContainElement(HaveKeyWithValue("name", "echo")))))

		By("a well-behaved client, afterwards")
		c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "v0"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cs.Close)
		Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("echo"))
		res := callTool(ctx, cs, "echo", map[string]any{"text": "still here"})
		Expect(res.IsError).To(BeFalse(), text(res))
		Expect(res.StructuredContent).To(Equal(map[string]any{"text": "still here"}))
	})

	It("answers arguments that are not an object with an isError result", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{}), streamableHTTP, "", nil)
		Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("echo"))
		res := callTool(ctx, cs, "echo", []string{"not", "an", "object"})
		Expect(res.IsError).To(BeTrue())
		Expect(text(res)).To(ContainSubstring("must be a JSON object"))
		Expect(toolCalls(ctx, ns)).To(BeEmpty())
	})
})
