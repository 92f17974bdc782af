package gateway_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/gateway"
)

// transport is how a spec's client reaches the gateway.
type transport string

const (
	inMemory       transport = "the in-memory transport"
	streamableHTTP transport = "streamable HTTP"
)

var transports = []transport{inMemory, streamableHTTP}

// legacyProtocol is the newest protocol version of the initialize handshake, which most
// agent runtimes speak; the SDK's client defaults to the newer stateless protocol.
const legacyProtocol = "2025-11-25"

// statelessProtocol is the SDK client's default: no handshake, one POST per request.
const statelessProtocol = "2026-07-28"

// connect opens a client session to g over tr, closed when the spec ends. version ""
// is the client's default protocol version.
func connect(ctx SpecContext, g *gateway.Gateway, tr transport, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	var t mcp.Transport
	switch tr {
	case inMemory:
		st, ct := mcp.NewInMemoryTransports()
		ss, err := g.Server().Connect(ctx, st, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(ss.Close)
		t = ct
	case streamableHTTP:
		srv := httptest.NewServer(g.HTTPHandler())
		DeferCleanup(srv.Close)
		t = &mcp.StreamableClientTransport{Endpoint: srv.URL}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "v0"}, opts)
	cs, err := c.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cs.Close)
	want := version
	if want == "" {
		want = statelessProtocol
	}
	Expect(cs.InitializeResult().ProtocolVersion).To(Equal(want), "the protocol the spec means to exercise")
	return cs
}

func listTools(ctx context.Context, cs *mcp.ClientSession) map[string]*mcp.Tool {
	res, err := cs.ListTools(ctx, nil)
	Expect(err).NotTo(HaveOccurred())
	out := map[string]*mcp.Tool{}
	for _, t := range res.Tools {
		out[t.Name] = t
	}
	return out
}

func toolNames(ctx context.Context, cs *mcp.ClientSession) []string {
	var names []string
	for n := range listTools(ctx, cs) {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func callTool(ctx context.Context, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	Expect(err).NotTo(HaveOccurred())
	return res
}

// text is the result's single text item.
func text(res *mcp.CallToolResult) string {
	ExpectWithOffset(1, res.Content).To(HaveLen(1))
	tc, ok := res.Content[0].(*mcp.TextContent)
	ExpectWithOffset(1, ok).To(BeTrue(), "content is %T, not text", res.Content[0])
	return tc.Text
}

// callOf reads the ToolCall a result names in its _meta.
func callOf(ctx context.Context, ns string, res *mcp.CallToolResult) *v1alpha1.ToolCall {
	name, _ := res.Meta[gateway.MetaCall].(string)
	ExpectWithOffset(1, name).NotTo(BeEmpty(), "the result names no call: %v", res.Meta)
	call := &v1alpha1.ToolCall{}
	ExpectWithOffset(1, k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, call)).To(Succeed())
	return call
}

// rpcCode is the JSON-RPC error code of err, or 0.
func rpcCode(err error) int64 {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return rpcErr.Code
	}
	return 0
}

func mcpCall(name string, args any) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: name, Arguments: args}
}
