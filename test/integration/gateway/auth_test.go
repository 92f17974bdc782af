package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/gateway"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// serviceAccountAgent creates a ServiceAccount in ns bound to the toolgate-agent role
// there and returns its username and a token for audience.
func serviceAccountAgent(ctx SpecContext, ns, name, audience string) (string, string) {
	cr, err := AgentRole.ClusterRole()
	Expect(err).NotTo(HaveOccurred())
	if err := k8sClient.Create(ctx, cr); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-agent", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		})
	return "system:serviceaccount:" + ns + ":" + name, token(ctx, ns, name, audience)
}

func token(ctx SpecContext, ns, sa, audience string) string {
	kube, err := kubernetes.NewForConfig(env.Config)
	Expect(err).NotTo(HaveOccurred())
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// startAuthGateway serves ns (and scope) over authenticating HTTP, as the suite's admin
// identity reviews tokens and impersonates; it returns the server's URL.
func startAuthGateway(ctx SpecContext, ns, scope string, opts gateway.HTTPOptions) string {
	url, _ := startAuthServer(ctx, ns, scope, opts)
	return url
}

func startAuthServer(ctx SpecContext, ns, scope string, opts gateway.HTTPOptions) (string, *gateway.HTTPServer) {
	gctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	opts.Config = env.Config
	s, err := gateway.NewHTTP(gctx, gateway.Options{
		Client: agentClient(ctx, env.Config, ns), Scope: scope, Logger: GinkgoLogr.WithName("gateway"),
	}, opts)
	Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(s.Handler())
	DeferCleanup(srv.Close)
	return srv.URL, s
}

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func connectToken(ctx SpecContext, url, tok, version string) *mcp.ClientSession {
	c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{tok}}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cs.Close)
	return cs
}

func rawRequest(ctx SpecContext, method, url, tok, session, body string) *http.Response {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", legacyProtocol)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(resp.Body.Close)
	return resp
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyProtocol +
	`","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

var _ = Describe("The HTTP gateway authenticates every client", Label("http", "auth"), func() {
	It("answers 401 with the resource metadata to a request without a token or with another audience's (RFC 6750 §3)", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		url := startAuthGateway(ctx, ns, "", gateway.HTTPOptions{})
		_, apiToken := serviceAccountAgent(ctx, ns, "other", "https://kubernetes.default.svc")
		challenge := `Bearer resource_metadata="` + url + `/.well-known/oauth-protected-resource"`

		By("no token: the challenge, without an error code (§3.1)")
		resp := rawRequest(ctx, http.MethodPost, url, "", "", initialize)
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
		Expect(resp.Header.Values("WWW-Authenticate")).To(Equal([]string{challenge}))
		Expect(readBody(resp)).To(Equal("no bearer token: send Authorization: Bearer <token>\n"))

		By("a token the API server refuses: error=\"invalid_token\" and why, said once")
		refused := `the API server does not accept this token for audience "toolgate"`
		for _, tok := range []string{"not-a-token", apiToken} {
			resp := rawRequest(ctx, http.MethodPost, url, tok, "", initialize)
			Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "token %.12q", tok)
			Expect(resp.Header.Values("WWW-Authenticate")).To(Equal([]string{challenge +
				`, error="invalid_token", error_description="invalid token: ` + strings.ReplaceAll(refused, `"`, "'") + `"`}))
			Expect(readBody(resp)).To(Equal("invalid token: " + refused + "\n"))
		}
		resp = rawRequest(ctx, http.MethodGet, url+"/.well-known/oauth-protected-resource", "", "", "")
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		var meta map[string]any
		Expect(decodeJSON(resp, &meta)).To(Succeed())
		Expect(meta).To(HaveKeyWithValue("resource", url))
	})

	It("acts as each token's identity: tool lists by scope subject, the requester, sessions bound to their identity", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		userA, tokA := serviceAccountAgent(ctx, ns, "agent-a", gateway.DefaultAudience)
		_, tokB := serviceAccountAgent(ctx, ns, "agent-b", gateway.DefaultAudience)
		create(ctx, MakeToolScope("team", ns).Subjects(userA).Obj())
		url := startAuthGateway(ctx, ns, "team", gateway.HTTPOptions{})

		a := connectToken(ctx, url, tokA, legacyProtocol)
		b := connectToken(ctx, url, tokB, "")
		Eventually(func() []string { return toolNames(ctx, a) }).WithContext(ctx).Should(ConsistOf("echo"))
		Expect(toolNames(ctx, b)).To(BeEmpty(), "agent-b is no subject of scope team")

		res := callTool(ctx, a, "echo", map[string]any{"text": "as a"})
		Expect(res.IsError).To(BeFalse(), text(res))
		call := callOf(ctx, ns, res)
		Expect(call.Spec.Requester).To(Equal(userA))
		Expect(call.Labels).To(HaveKeyWithValue(v1alpha1.LabelCreatedBy, gateway.CreatedBy))

		By("agent-b's token on agent-a's session")
		Expect(a.ID()).NotTo(BeEmpty())
		resp := rawRequest(ctx, http.MethodPost, url, tokB, a.ID(), `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`)
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
		resp = rawRequest(ctx, http.MethodDelete, url, tokB, a.ID(), "")
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
		Expect(toolNames(ctx, a)).To(ConsistOf("echo"), "agent-a's session goes on")
	})

	It("cancels a session's running call at once when the client ends the session (DELETE): the call stays, Cancelled, its requester the token's user", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("forever", Outcome{Hold: true})
		create(ctx, plainTool("forever", ns).Obj())
		userC, tok := serviceAccountAgent(ctx, ns, "agent-c", gateway.DefaultAudience)
		url := startAuthGateway(ctx, ns, "", gateway.HTTPOptions{})
		cs := connectToken(ctx, url, tok, legacyProtocol)
		Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("forever"))
		returned := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			_, err := cs.CallTool(ctx, mcpCall("forever", nil))
			returned <- err
		}()
		Eventually(func() []v1alpha1.ToolCall { return toolCalls(ctx, ns) }).WithContext(ctx).WithTimeout(LongTimeout).
			Should(ConsistOf(HaveField("Status.Phase", v1alpha1.PhaseRunning)), "the body runs")

		resp := rawRequest(ctx, http.MethodDelete, url, tok, cs.ID(), "")
		Expect(resp.StatusCode).To(Equal(http.StatusNoContent))
		Eventually(returned).WithContext(ctx).WithTimeout(10 * time.Second).Should(Receive())
		expectCancelledCall(ctx, ns, userC)
	})

	It("expires an idle session, and then the identity's gateway", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		_, tok := serviceAccountAgent(ctx, ns, "agent-e", gateway.DefaultAudience)
		url, s := startAuthServer(ctx, ns, "", gateway.HTTPOptions{SessionIdle: 2 * time.Second})
		resp := rawRequest(ctx, http.MethodPost, url, tok, "", initialize)
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		session := resp.Header.Get("Mcp-Session-Id")
		Expect(session).NotTo(BeEmpty())
		Expect(s.Identities()).To(Equal(1))
		// The client leaves without a DELETE (as the TypeScript SDK's close() does).
		Eventually(func() int {
			return rawRequest(ctx, http.MethodPost, url, tok, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).StatusCode
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(3 * time.Second).Should(Equal(http.StatusNotFound))
		Eventually(s.Identities).WithContext(ctx).WithTimeout(10 * time.Second).Should(BeZero())
	})

	It("bounds the calls in flight per identity", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("hold", Outcome{Hold: true})
		create(ctx, plainTool("hold", ns).Obj())
		_, tok := serviceAccountAgent(ctx, ns, "agent-d", gateway.DefaultAudience)
		url := startAuthGateway(ctx, ns, "", gateway.HTTPOptions{MaxCalls: 1})
		cs := connectToken(ctx, url, tok, "")
		Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("hold"))
		callCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { _, _ = cs.CallTool(callCtx, mcpCall("hold", map[string]any{"first": true})) }()
		Eventually(func() []v1alpha1.ToolCall { return toolCalls(ctx, ns) }).WithContext(ctx).Should(HaveLen(1))
		res := callTool(ctx, cs, "hold", map[string]any{"second": true})
		Expect(res.IsError).To(BeTrue())
		Expect(text(res)).To(ContainSubstring("calls in flight"))
		Expect(toolCalls(ctx, ns)).To(HaveLen(1))
	})
})

func decodeJSON(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

func readBody(resp *http.Response) string {
	GinkgoHelper()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// The official TypeScript SDK against the authenticating gateway, when it is installed
// (TOOLGATE_TS_SDK: a directory whose node_modules holds @modelcontextprotocol/sdk, e.g.
// test/ts, where make test-integration runs `npm ci`: make ts-sdk).
var _ = Describe("The TypeScript SDK", Label("http", "auth", "typescript"), func() {
	It("connects with a token, lists the tools, calls one and closes", func(ctx SpecContext) {
		dir := os.Getenv("TOOLGATE_TS_SDK")
		if dir == "" {
			Skip("TOOLGATE_TS_SDK is not set: make test-integration sets it after `npm ci` in test/ts (make ts-sdk)")
		}
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		user, tok := serviceAccountAgent(ctx, ns, "ts-agent", gateway.DefaultAudience)
		url := startAuthGateway(ctx, ns, "", gateway.HTTPOptions{})
		// ES modules resolve packages next to the script, not through NODE_PATH.
		script, err := os.ReadFile("../../ts/trial.mjs")
		Expect(err).NotTo(HaveOccurred())
		path := filepath.Join(dir, "toolgate-trial.mjs")
		Expect(os.WriteFile(path, script, 0o600)).To(Succeed())
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, "node", path, url, tok, "echo", `{"text":"from typescript"}`)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		Expect(err).NotTo(HaveOccurred(), "stdout %s\nstderr %s", out, stderr.String())
		var got struct {
			Tools  []string           `json:"tools"`
			Result mcp.CallToolResult `json:"result"`
		}
		Expect(json.Unmarshal(out, &got)).To(Succeed(), "%s", out)
		Expect(got.Tools).To(ContainElement("echo"))
		Expect(got.Result.IsError).To(BeFalse())
		Expect(callOf(ctx, ns, &got.Result).Spec.Requester).To(Equal(user))
	})
})
