package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/gateway"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// The workspace tools of these specs: ws-write writes content to path, ws-read prints
// path's content (exit 1 when absent), each on its call's session Workspace.
const (
	wsWrite = "ws-write"
	wsRead  = "ws-read"
)

type fileArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// workspaceScope scripts the workspace tools and creates them and scope "coding", which
// declares a workspace, in ns; subjects, when given, are the scope's only subjects.
func workspaceScope(ctx SpecContext, ns string, subjects ...string) {
	kubelet.ScriptWorkspace(wsWrite, func(ws *Workspace, raw []byte) Outcome {
		var a fileArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			return Outcome{ExitCode: 2, Stderr: err.Error()}
		}
		if err := ws.WriteFile(a.Path, []byte(a.Content)); err != nil {
			return Outcome{ExitCode: 1, Stderr: err.Error()}
		}
		return Outcome{Stdout: []byte(`{"written":true}`)}
	})
	kubelet.ScriptWorkspace(wsRead, func(ws *Workspace, raw []byte) Outcome {
		var a fileArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			return Outcome{ExitCode: 2, Stderr: err.Error()}
		}
		data, ok := ws.ReadFile(a.Path)
		if !ok {
			return Outcome{ExitCode: 1, Stderr: a.Path + ": no such file"}
		}
		out, _ := json.Marshal(map[string]string{"content": string(data)})
		return Outcome{Stdout: out}
	})
	scope := MakeToolScope("coding", ns).Workspace("1Gi", time.Hour)
	if len(subjects) > 0 {
		scope = scope.Subjects(subjects...)
	}
	create(ctx, scope.Obj(),
		MakeTool(wsWrite, ns).Image("example/write:1").Command("/write").Workspace(v1alpha1.WorkspaceReadWrite).Obj(),
		MakeTool(wsRead, ns).Image("example/read:1").Command("/read").Workspace(v1alpha1.WorkspaceReadOnly).Obj())
}

// withKey is the _meta of a request in the client session key.
func withKey(key string) mcp.Meta { return mcp.Meta{gateway.MetaSession: key} }

// writeFile writes notes.txt in the workspace of cs (and key, when not ""), and returns
// the call's spec.session.
func writeFile(ctx SpecContext, ns string, cs *mcp.ClientSession, key, content string) string {
	GinkgoHelper()
	p := mcpCall(wsWrite, map[string]any{"path": "notes.txt", "content": content})
	if key != "" {
		p.Meta = withKey(key)
	}
	res, err := cs.CallTool(ctx, p)
	Expect(err).NotTo(HaveOccurred())
	Expect(res.IsError).To(BeFalse(), text(res))
	session := callOf(ctx, ns, res).Spec.Session
	Expect(session).To(HavePrefix("mcp-"))
	return session
}

// readFile is notes.txt as the workspace of cs (and key) holds it, or the read's error.
func readFile(ctx SpecContext, cs *mcp.ClientSession, key string) string {
	GinkgoHelper()
	p := mcpCall(wsRead, map[string]any{"path": "notes.txt"})
	if key != "" {
		p.Meta = withKey(key)
	}
	res, err := cs.CallTool(ctx, p)
	Expect(err).NotTo(HaveOccurred())
	if res.IsError {
		return text(res)
	}
	return res.StructuredContent.(map[string]any)["content"].(string)
}

// connectURL opens a client session of protocol version ("": the SDK's stateless
// default) to url, with tok as bearer token when not "".
func connectURL(ctx SpecContext, url, tok, version string) *mcp.ClientSession {
	if tok != "" {
		return connectToken(ctx, url, tok, version)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cs.Close)
	return cs
}

func serveHTTP(g *gateway.Gateway) string {
	srv := httptest.NewServer(g.HTTPHandler())
	DeferCleanup(srv.Close)
	return srv.URL
}

const noFile = "notes.txt: no such file"

var _ = Describe("A workspace per client session (--session-per-client)", Label("session", "workspace"), func() {
	It("gives two MCP sessions of one identity two workspaces", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		workspaceScope(ctx, ns)
		url := serveHTTP(startGateway(ctx, ns, gatewayOptions{scope: "coding", sessionPerClient: true}))
		first, second := connectURL(ctx, url, "", legacyProtocol), connectURL(ctx, url, "", legacyProtocol)
		Expect(first.ID()).NotTo(Equal(second.ID()))
		Eventually(func() []string { return toolNames(ctx, first) }).WithContext(ctx).Should(ContainElement(wsWrite))

		s1 := writeFile(ctx, ns, first, "", "from the first session")
		Expect(readFile(ctx, second, "")).To(ContainSubstring(noFile), "the second session sees none of the first's files")
		s2 := writeFile(ctx, ns, second, "", "from the second session")
		Expect(s2).NotTo(Equal(s1))
		Expect(readFile(ctx, first, "")).To(Equal("from the first session"))
		Expect(readFile(ctx, second, "")).To(Equal("from the second session"))
		Expect(s1).NotTo(ContainSubstring(first.ID()), "the MCP session ID, a secret of its session, is not in the ToolCall")
	})

	It("gives stateless (2026-07-28) requests the workspace of their _meta key, across connections", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		workspaceScope(ctx, ns)
		url := serveHTTP(startGateway(ctx, ns, gatewayOptions{scope: "coding", sessionPerClient: true}))
		writer := connectURL(ctx, url, "", "")
		Eventually(func() []string { return toolNames(ctx, writer) }).WithContext(ctx).Should(ContainElement(wsWrite))
		s1 := writeFile(ctx, ns, writer, "task-1", "task one's notes")

		reader := connectURL(ctx, url, "", "")
		Expect(readFile(ctx, reader, "task-1")).To(Equal("task one's notes"), "one key, one workspace")
		Expect(readFile(ctx, reader, "task-2")).To(ContainSubstring(noFile), "another key, another workspace")
		Expect(writeFile(ctx, ns, reader, "task-2", "two")).NotTo(Equal(s1))

		By("without a key a stateless call has no session: the operator refuses a workspace tool")
		res := callTool(ctx, reader, wsRead, map[string]any{"path": "notes.txt"})
		Expect(res.IsError).To(BeTrue())
		Expect(res.Meta).To(HaveKeyWithValue(gateway.MetaReason, v1alpha1.ReasonWorkspaceNeedsSession))
		Expect(callOf(ctx, ns, res).Spec.Session).To(BeEmpty())

		By("a key that is no string is refused, and no call made")
		before := len(toolCalls(ctx, ns))
		p := mcpCall(wsRead, map[string]any{"path": "notes.txt"})
		p.Meta = mcp.Meta{gateway.MetaSession: 42}
		res, err := reader.CallTool(ctx, p)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeTrue())
		Expect(res.Meta).To(HaveKeyWithValue(gateway.MetaReason, gateway.ReasonSessionKeyInvalid))
		Expect(toolCalls(ctx, ns)).To(HaveLen(before))
	})

	It("never lets one identity reach another's session with the same key, or with the other's spec.session as key", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		userA, tokA := serviceAccountAgent(ctx, ns, "agent-a", gateway.DefaultAudience)
		userB, tokB := serviceAccountAgent(ctx, ns, "agent-b", gateway.DefaultAudience)
		workspaceScope(ctx, ns, userA, userB)
		url := startSessionServer(ctx, ns, "coding")
		a, b := connectURL(ctx, url, tokA, ""), connectURL(ctx, url, tokB, "")
		Eventually(func() []string { return toolNames(ctx, a) }).WithContext(ctx).Should(ContainElement(wsWrite))
		Eventually(func() []string { return toolNames(ctx, b) }).WithContext(ctx).Should(ContainElement(wsRead))

		sessionA := writeFile(ctx, ns, a, "shared", "agent-a's secret")
		for _, key := range []string{"shared", sessionA} {
			Expect(readFile(ctx, b, key)).To(ContainSubstring(noFile), "agent-b with key %q", key)
		}
		Expect(readFile(ctx, a, "shared")).To(Equal("agent-a's secret"))
		for _, call := range toolCalls(ctx, ns) {
			if call.Spec.Requester == userB {
				Expect(call.Spec.Session).NotTo(Equal(sessionA))
			}
		}
	})
})

// startSessionServer serves ns's scope over authenticating HTTP with SessionPerClient.
func startSessionServer(ctx SpecContext, ns, scope string) string {
	gctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	s, err := gateway.NewHTTP(gctx, gateway.Options{
		Client: agentClient(ctx, env.Config, ns), Scope: scope, SessionPerClient: true, Logger: GinkgoLogr.WithName("gateway"),
	}, gateway.HTTPOptions{Config: env.Config})
	Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(s.Handler())
	DeferCleanup(srv.Close)
	return srv.URL
}

// recorder keeps the headers of every request and response that passes it.
type recorder struct {
	mu        sync.Mutex
	requests  []http.Header
	responses []http.Header
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.requests = append(r.requests, req.Header.Clone())
	r.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.responses = append(r.responses, resp.Header.Clone())
	}
	return resp, err
}

var _ = Describe("A 2026-07-28 client (the Go SDK's default)", Label("http", "stateless"), func() {
	It("lists and calls tools statelessly: no session, the method and name in headers", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		url := serveHTTP(startGateway(ctx, ns, gatewayOptions{}))
		rec := &recorder{}
		c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "v0"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}}, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cs.Close)
		Expect(cs.InitializeResult().ProtocolVersion).To(Equal(statelessProtocol))
		Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("echo"))
		res := callTool(ctx, cs, "echo", map[string]any{"text": "stateless"})
		Expect(res.IsError).To(BeFalse(), text(res))
		Expect(res.StructuredContent).To(HaveKeyWithValue("text", "stateless"))
		Expect(cs.ID()).To(BeEmpty())

		rec.mu.Lock()
		defer rec.mu.Unlock()
		methods := map[string]string{}
		for _, h := range rec.requests {
			Expect(h.Get("Mcp-Protocol-Version")).To(Equal(statelessProtocol))
			Expect(h.Get("Mcp-Session-Id")).To(BeEmpty())
			methods[h.Get("Mcp-Method")] = h.Get("Mcp-Name")
		}
		Expect(methods).To(HaveKeyWithValue("tools/call", "echo"))
		Expect(methods).To(HaveKey("tools/list"))
		Expect(methods).To(HaveKey("server/discover"))
		for _, h := range rec.responses {
			Expect(h.Get("Mcp-Session-Id")).To(BeEmpty(), "a stateless answer opens no session")
		}
		Expect(strings.Join(rec.requests[0].Values("Mcp-Method"), ",")).To(Equal("server/discover"))
	})
})
