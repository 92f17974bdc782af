package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/gateway"
)

// A workspace per MCP session (issue 33 item 4) on real Pods and volumes: an HTTP gateway
// with --session-per-client on a workspace scope of the spec's own (workspaceScope), run
// from this checkout as the admin kubeconfig (which may review tokens and impersonate),
// and one ServiceAccount's token in two MCP sessions. The chart's deployed gateway serves
// the namespace layer, which declares no workspace.
var _ = Describe("the MCP gateway with a workspace per client session", Label("gateway", "mcp", "workspace"), func() {
	It("gives two MCP sessions of one ServiceAccount two workspaces, and a stateless key its own", func(ctx SpecContext) {
		const sa = "e2e-session-agent"
		scope := workspaceScopeRetained(ctx, wsRetentionKept)
		user := scopeServiceAccount(ctx, scope, sa)
		token := mintToken(ctx, sa, "toolgate")
		twoSessionsTwoWorkspaces(ctx, startSessionGateway(ctx, scope), token, user, "e2e-task")
	}, SpecTimeout(5*time.Minute))
})

// scopeServiceAccount creates the ServiceAccount sa in the demo namespace, bound to
// toolgate-agent, and makes it a subject of scope; it returns its user name. Deleted when
// the spec ends.
func scopeServiceAccount(ctx context.Context, scope, sa string) string {
	GinkgoHelper()
	user := "system:serviceaccount:" + demoNS + ":" + sa
	Eventually(func() error { // the operator may write the scope's status in between: a conflict
		var s toolgatev1alpha1.ToolScope
		if err := admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: scope}, &s); err != nil {
			return err
		}
		s.Spec.Subjects = append(s.Spec.Subjects, user)
		return admin.Update(ctx, &s)
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
	labels := map[string]string{e2eLabel: "true"}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: demoNS, Labels: labels}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: demoNS, Labels: labels},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "toolgate-agent"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: demoNS}}},
	} {
		Expect(client.IgnoreAlreadyExists(admin.Create(ctx, obj))).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, obj))).To(Succeed()) })
	}
	return user
}

// startSessionGateway builds toolgate from this checkout and runs its HTTP gateway on a
// loopback port for scope, with a spec.session per client session, until the spec ends.
func startSessionGateway(ctx SpecContext, scope string) string {
	GinkgoHelper()
	url, _ := startLocalGateway(ctx, buildToolgate(ctx), "--scope", scope, "--session-per-client")
	return url
}

// buildToolgate builds toolgate from this checkout into a temporary directory and returns
// its path.
func buildToolgate(ctx context.Context) string {
	GinkgoHelper()
	bin := filepath.Join(GinkgoT().TempDir(), "toolgate")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/toolgate")
	build.Dir = root
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build ./cmd/toolgate: %s", out)
	return bin
}

// startLocalGateway runs bin's HTTP gateway (toolgate mcp --http, with mcpArgs) on a free
// loopback port as the admin kubeconfig (which may review tokens and impersonate), serving
// the demo namespace; it returns its URL once it serves, and a function that kills it (as
// the spec's end does).
func startLocalGateway(ctx SpecContext, bin string, mcpArgs ...string) (url string, kill func()) {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	args := append([]string{"--kubeconfig", adminCfg, "-n", demoNS, "mcp", "--http", addr}, mcpArgs...)
	gw := exec.CommandContext(context.WithoutCancel(ctx), bin, args...)
	gw.Stdout, gw.Stderr = GinkgoWriter, GinkgoWriter
	Expect(gw.Start()).To(Succeed())
	var once sync.Once
	kill = func() {
		once.Do(func() {
			_ = gw.Process.Kill()
			_ = gw.Wait()
		})
	}
	DeferCleanup(kill)
	url = fmt.Sprintf("http://%s/", addr)
	waitServing(ctx, url)
	return url, kill
}

// waitServing waits until an HTTP gateway at url answers (its OAuth metadata needs no token).
func waitServing(ctx context.Context, url string) {
	GinkgoHelper()
	Eventually(func() (int, error) {
		resp, err := http.Get(url + ".well-known/oauth-protected-resource")
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Equal(http.StatusOK))
}

// twoSessionsTwoWorkspaces checks a gateway with --session-per-client on a workspace scope
// at url, as user with token: two MCP sessions (2025-11-25) write and read notes.txt in two
// workspaces, and stateless (2026-07-28) clients sending the _meta session key share a
// third across connections.
func twoSessionsTwoWorkspaces(ctx context.Context, url, token, user, key string) {
	GinkgoHelper()
	first, second := connectBearer(ctx, url, token, "2025-11-25"), connectBearer(ctx, url, token, "2025-11-25")
	Expect(first.ID()).NotTo(Equal(second.ID()))
	Eventually(func(g Gomega) {
		tools, err := first.ListTools(ctx, nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(toolNamesOf(tools)).To(ContainElements("write_file", "read_file"))
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())

	s1 := sessionWrite(ctx, first, nil, user, "from the first session")
	Expect(sessionRead(ctx, second, nil)).To(ContainSubstring("no such file"), "the second session sees none of the first's files")
	s2 := sessionWrite(ctx, second, nil, user, "from the second session")
	Expect(s2).NotTo(Equal(s1))
	Expect(sessionRead(ctx, first, nil)).To(Equal("from the first session"))
	Expect(sessionRead(ctx, second, nil)).To(Equal("from the second session"))

	By("stateless (2026-07-28) clients: one _meta key, one workspace, across connections")
	meta := mcp.Meta{gateway.MetaSession: key}
	s3 := sessionWrite(ctx, connectBearer(ctx, url, token, ""), meta, user, "from a stateless client")
	Expect(s3).NotTo(BeElementOf(s1, s2))
	Expect(sessionRead(ctx, connectBearer(ctx, url, token, ""), meta)).To(Equal("from a stateless client"))
}

// sessionWrite writes notes.txt in the workspace of cs (and meta) and returns the call's
// spec.session, after checking its requester.
func sessionWrite(ctx context.Context, cs *mcp.ClientSession, meta mcp.Meta, user, content string) string {
	GinkgoHelper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: "write_file",
		Arguments: map[string]any{"path": "notes.txt", "content": content}})
	Expect(err).NotTo(HaveOccurred())
	Expect(res.IsError).To(BeFalse(), "result: %+v", res.Content)
	var call toolgatev1alpha1.ToolCall
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: res.Meta[gateway.MetaCall].(string)}, &call)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, &call))).To(Succeed()) })
	Expect(call.Spec.Requester).To(Equal(user))
	Expect(call.Spec.Session).To(HavePrefix("mcp-"))
	return call.Spec.Session
}

// sessionRead is notes.txt as the workspace of cs (and meta) holds it, or the error text.
func sessionRead(ctx context.Context, cs *mcp.ClientSession, meta mcp.Meta) string {
	GinkgoHelper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: "read_file", Arguments: map[string]any{"path": "notes.txt"}})
	Expect(err).NotTo(HaveOccurred())
	Expect(res.Content).To(HaveLen(1))
	if res.IsError {
		return res.Content[0].(*mcp.TextContent).Text
	}
	structured, ok := res.StructuredContent.(map[string]any)
	Expect(ok).To(BeTrue(), "result: %+v", res.Content)
	return fmt.Sprint(structured["content"])
}
