package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// connectPage is the page whose HTTP recipe this spec runs as written.
const connectPage = "docs/connect-your-agent.md"

// recipeBlock is the first ```sh block under the page's heading.
func recipeBlock(heading string) string {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(root, connectPage))
	Expect(err).NotTo(HaveOccurred())
	page := string(data)
	at := strings.Index(page, "\n"+heading)
	Expect(at).To(BeNumerically(">=", 0), "%s has the heading %q", connectPage, heading)
	rest := page[at:]
	start := strings.Index(rest, "\n```sh\n")
	Expect(start).To(BeNumerically(">=", 0), "a sh block under %q", heading)
	rest = rest[start+len("\n```sh\n"):]
	end := strings.Index(rest, "\n```")
	Expect(end).To(BeNumerically(">=", 0))
	return rest[:end]
}

// The HTTP recipe of docs/connect-your-agent.md (a ServiceAccount, its RoleBinding, a token
// for the audience toolgate, the chart's gateway's URL), run by bash as the page writes it,
// then the Go SDK's client (2026-07-28, stateless) against that gateway: tools/list, and
// the gVisor and credentialed example tools (config/examples/isolation.yaml).
var _ = Describe("connect your agent: the page's HTTP recipe", Ordered, Label("gateway", "mcp", "connect", "examples"), func() {
	const sa = "my-agent"
	requester := "system:serviceaccount:" + demoNS + ":" + sa
	var url, token string

	BeforeAll(func(ctx SpecContext) {
		for _, name := range []string{"api-token", "gvisor-kernel"} {
			waitToolRegistered(ctx, name) // make up applies config/examples/isolation.yaml
		}
		// my-agent may be there already (someone followed the page by hand): then it stays.
		for _, obj := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.RoleBinding{}} {
			err := admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: sa}, obj)
			if apierrors.IsNotFound(err) {
				obj.SetName(sa)
				obj.SetNamespace(demoNS)
				DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, obj))).To(Succeed()) })
			} else {
				Expect(err).NotTo(HaveOccurred())
			}
		}

		script := recipeBlock("## Any MCP client over HTTP")
		By("running the recipe:\n" + script)
		cmd := exec.CommandContext(ctx, "bash", "-c", script+"\nprintf '%s\\n%s\\n' \"$TOOLGATE_TOKEN\" \"$TOOLGATE_URL\"\n")
		cmd.Dir = root
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		Expect(cmd.Run()).To(Succeed(), "stderr: %s", stderr.String())
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		Expect(len(lines)).To(BeNumerically(">=", 2), "stdout %q stderr %q", stdout.String(), stderr.String())
		token, url = lines[len(lines)-2], lines[len(lines)-1]
		Expect(token).NotTo(BeEmpty(), "TOOLGATE_TOKEN; stderr: %s", stderr.String())
		Expect(url).To(MatchRegexp(`^http://[0-9.]+:8090/$`), "TOOLGATE_URL; stderr: %s", stderr.String())
	}, NodeTimeout(2*time.Minute))

	// callThrough calls tool with no arguments through the gateway and returns the text of a
	// result that is no error, and the call it made (deleted when the spec ends).
	callThrough := func(ctx SpecContext, cs *mcp.ClientSession, tool string) (string, *toolgatev1alpha1.ToolCall) {
		GinkgoHelper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Content).To(HaveLen(1))
		text := res.Content[0].(*mcp.TextContent).Text
		Expect(res.IsError).To(BeFalse(), "%s: %s (meta %v)", tool, text, res.Meta)
		Expect(res.Meta).To(HaveKeyWithValue(gateway.MetaPhase, "Succeeded"))
		name, _ := res.Meta[gateway.MetaCall].(string)
		Expect(name).NotTo(BeEmpty())
		call := &toolgatev1alpha1.ToolCall{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, call)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })
		Expect(call.Spec.Requester).To(Equal(requester), "the gateway acted as the recipe's ServiceAccount")
		Expect(call).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
		return text, call
	}

	It("lists the example tools and runs gvisor-kernel under gVisor and api-token with its credential redacted", func(ctx SpecContext) {
		cs := connectBearer(ctx, url, token, "")
		Eventually(func(g Gomega) {
			tools, err := cs.ListTools(ctx, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(toolNamesOf(tools)).To(ContainElements("echo", "sh", "api-token", "fetch", "fetch-with-token", "gvisor-kernel"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())

		By("gvisor-kernel: the body sees gVisor's kernel")
		text, call := callThrough(ctx, cs, "gvisor-kernel")
		AddReportEntry("gvisor-kernel through the gateway", text)
		Expect(text).To(ContainSubstring("Starting gVisor"))
		for _, p := range podsOf(ctx, call) {
			Expect(p.Spec.RuntimeClassName).To(HaveValue(Equal(gvisorClass)), "Pod %s", p.Name)
		}

		By("api-token: the length of the Secret's value, the value itself redacted")
		var secret corev1.Secret
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: "demo-api-token"}, &secret)).To(Succeed(),
			"make up creates the Secret demo-api-token (hack/up.sh ensure_demo_secret)")
		value := strings.TrimSpace(string(secret.Data["token"]))
		Expect(value).NotTo(BeEmpty())
		text, call = callThrough(ctx, cs, "api-token")
		m := regexp.MustCompile(`^API_TOKEN has (\d+) bytes; printed: \[REDACTED\]\s*$`).FindStringSubmatch(text)
		Expect(m).NotTo(BeNil(), "text %q", text)
		Expect(m[1]).To(Equal(strconv.Itoa(len(secret.Data["token"]))))
		Expect(text).NotTo(ContainSubstring(value))
		Expect(call.Status.Result.Meta).To(HaveKeyWithValue("redactions", "1"))
	}, SpecTimeout(3*time.Minute))
})
