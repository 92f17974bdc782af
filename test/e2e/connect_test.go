package e2e

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/hack/docrecipes"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// recipe is the block of docs/connect-your-agent.md that r names, as the page writes it
// (the unit test of hack/docrecipes checks that each is there, as these specs need it).
func recipe(r docrecipes.Recipe) string {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(root, docrecipes.ConnectPage))
	Expect(err).NotTo(HaveOccurred())
	Expect(r.Check(string(data))).To(Succeed())
	block, err := r.Block(string(data))
	Expect(err).NotTo(HaveOccurred())
	return block
}

// claudeStandIn stands in for Claude Code's CLI in a recipe: it prints its arguments, one
// a line, instead of adding a server.
const claudeStandIn = "claude() { printf '%s\\n' \"$@\"; }\n"

// runRecipe runs a sh recipe with bash in the repository's root, as its reader would (the
// claude command printing its arguments), with env added and stdin; it returns stdout.
func runRecipe(ctx context.Context, script string, env []string, stdin string) string {
	GinkgoHelper()
	By("running the recipe:\n" + script)
	cmd := exec.CommandContext(ctx, "bash", "-c", claudeStandIn+script)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), "PWD="+root), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	Expect(cmd.Run()).To(Succeed(), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	return stdout.String()
}

// callThrough calls tool with no arguments through the gateway session cs and returns the
// text of a result that is no error, and the call it made as requester (deleted when the
// spec ends).
func callThrough(ctx context.Context, cs *mcp.ClientSession, tool, requester string) (string, *toolgatev1alpha1.ToolCall) {
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
	Expect(call.Spec.Requester).To(Equal(requester), "the gateway acted as the recipe's identity")
	Expect(call).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
	return text, call
}

// The stdio recipe of docs/connect-your-agent.md: `claude mcp add` (with a stand-in claude
// that prints what it would add) gives the JSON config's command and args, and that command,
// from this checkout (make test-e2e builds bin/toolgate: make cli), serves the demo scope's
// tools on stdio to the Go SDK's client as the agent user.
var _ = Describe("connect your agent: the page's stdio recipe", Label("gateway", "mcp", "connect", "cli"), func() {
	It("runs the Claude Code / Claude Desktop config: the demo scope's eleven tools, whoami as agent", func(ctx SpecContext) {
		name, srv, err := docrecipes.OnlyServer(recipe(docrecipes.StdioJSON))
		Expect(err).NotTo(HaveOccurred())
		// "/path/to/toolgate" is the reader's checkout: this one.
		local := func(s string) string { return strings.Replace(s, "/path/to/toolgate", root, 1) }
		argv := []string{local(srv.Command)}
		for _, a := range srv.Args {
			argv = append(argv, local(a))
		}
		Expect(argv[0]).To(BeARegularFile(), "make cli builds bin/toolgate (make up and make test-e2e run it)")

		By("claude mcp add adds the same command as the JSON config")
		added := strings.Split(strings.TrimSuffix(runRecipe(ctx, recipe(docrecipes.StdioAdd), nil, ""), "\n"), "\n")
		Expect(added).To(Equal(append([]string{"mcp", "add", name, "--"}, argv...)))

		By("the config's command, as an MCP server on stdio: " + strings.Join(argv, " "))
		server := exec.Command(argv[0], argv[1:]...)
		server.Stderr = GinkgoWriter
		c := mcp.NewClient(&mcp.Implementation{Name: "claude-code-stand-in", Version: "v0"}, nil)
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: server}, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cs.Close)
		var demo toolgatev1alpha1.ToolScope
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: demoScope}, &demo)).To(Succeed())
		Expect(demo.Spec.Allow).To(HaveLen(11), "the page says the eleven example tools")
		Eventually(func(g Gomega) {
			tools, err := cs.ListTools(ctx, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(toolNamesOf(tools)).To(ConsistOf(demo.Spec.Allow))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())

		By(`"run whoami"`)
		text, call := callThrough(ctx, cs, "whoami", "agent")
		Expect(call.Spec.Scope).To(Equal(demoScope))
		Expect(text).NotTo(BeEmpty())
	}, SpecTimeout(2*time.Minute))
})

// The HTTP recipes of docs/connect-your-agent.md, each as the page writes it: the setup (a
// ServiceAccount, its RoleBinding, a token for the audience toolgate, the chart's gateway's
// URL) run by bash; `claude mcp add --transport http` (a stand-in claude prints what it
// would add) and the .mcp.json, whose URL and header the Go SDK's client (2026-07-28,
// stateless) then uses: tools/list, and the gVisor and credentialed example tools
// (config/examples/isolation.yaml). Then, with that token: the Tasks client (node, the
// TypeScript SDK of test/ts) through an approval the page's `toolgate approve` gives, and
// the per-client sessions gateway (scope coding, whose subjects include my-agent) started
// as the page starts it, where two MCP sessions see two workspaces.
var _ = Describe("connect your agent: the page's HTTP recipes", Ordered, Label("gateway", "mcp", "connect", "examples"), func() {
	const sa = "my-agent"
	requester := "system:serviceaccount:" + demoNS + ":" + sa
	var url, token string
	var env []string

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

		out := runRecipe(ctx, recipe(docrecipes.HTTPSetup)+"\nprintf '%s\\n%s\\n' \"$TOOLGATE_TOKEN\" \"$TOOLGATE_URL\"\n", nil, "")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		Expect(len(lines)).To(BeNumerically(">=", 2), "stdout %q", out)
		token, url = lines[len(lines)-2], lines[len(lines)-1]
		Expect(token).NotTo(BeEmpty(), "TOOLGATE_TOKEN")
		Expect(url).To(MatchRegexp(`^http://[0-9.]+:8090/$`), "TOOLGATE_URL")
		env = []string{"TOOLGATE_URL=" + url, "TOOLGATE_TOKEN=" + token}
	}, NodeTimeout(2*time.Minute))

	It("adds the gateway to Claude Code and an .mcp.json, lists the example tools and runs gvisor-kernel and api-token", func(ctx SpecContext) {
		name, srv, err := docrecipes.OnlyServer(recipe(docrecipes.HTTPJSON))
		Expect(err).NotTo(HaveOccurred())
		vars := map[string]string{"TOOLGATE_URL": url, "TOOLGATE_TOKEN": token}
		expand := func(s string) string { return os.Expand(s, func(k string) string { return vars[k] }) }
		endpoint, header := expand(srv.URL), expand(srv.Headers["Authorization"])
		Expect(endpoint).To(Equal(url))
		Expect(header).To(Equal("Bearer " + token))

		By("claude mcp add --transport http adds the same server as the .mcp.json")
		added := strings.Split(strings.TrimSuffix(runRecipe(ctx, recipe(docrecipes.HTTPAdd), env, ""), "\n"), "\n")
		Expect(added).To(Equal([]string{"mcp", "add", "--transport", srv.Type, name, endpoint, "--header", "Authorization: " + header}))

		cs := connectBearer(ctx, endpoint, strings.TrimPrefix(header, "Bearer "), "")
		var demo toolgatev1alpha1.ToolScope // the page: the namespace layer serves the same eleven
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: demoScope}, &demo)).To(Succeed())
		Eventually(func(g Gomega) {
			tools, err := cs.ListTools(ctx, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(toolNamesOf(tools)).To(ContainElements(demo.Spec.Allow))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())

		By("gvisor-kernel: the body sees gVisor's kernel")
		text, call := callThrough(ctx, cs, "gvisor-kernel", requester)
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
		text, call = callThrough(ctx, cs, "api-token", requester)
		m := regexp.MustCompile(`^API_TOKEN has (\d+) bytes; printed: \[REDACTED\]\s*$`).FindStringSubmatch(text)
		Expect(m).NotTo(BeNil(), "text %q", text)
		Expect(m[1]).To(Equal(strconv.Itoa(len(secret.Data["token"]))))
		Expect(text).NotTo(ContainSubstring(value))
		Expect(call.Status.Result.Meta).To(HaveKeyWithValue("redactions", "1"))
	}, SpecTimeout(3*time.Minute))

	It("runs the Tasks client: a task input_required until the page's toolgate approve, then completed", func(ctx SpecContext) {
		sdk := filepath.Join(root, "test", "ts", "node_modules")
		Expect(filepath.Join(sdk, "@modelcontextprotocol", "sdk")).To(BeADirectory(),
			"the TypeScript SDK: make ts-sdk (make test-e2e runs it)")
		dir := GinkgoT().TempDir() // ES modules resolve packages next to the script
		Expect(os.Symlink(sdk, filepath.Join(dir, "node_modules"))).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "tasks.mjs"), []byte(recipe(docrecipes.TasksJS)), 0o600)).To(Succeed())

		since := metav1.Now().Rfc3339Copy() // creationTimestamp has whole seconds
		node := exec.CommandContext(ctx, "node", "tasks.mjs")
		node.Dir, node.Env = dir, append(os.Environ(), env...)
		var out bytes.Buffer
		node.Stdout, node.Stderr = &out, GinkgoWriter
		Expect(node.Start()).To(Succeed())
		exited := make(chan error, 1)
		go func() { exited <- node.Wait() }()

		By("the call the client's task stands for parks for approval")
		var parked *toolgatev1alpha1.ToolCall
		Eventually(func(g Gomega) {
			var calls toolgatev1alpha1.ToolCallList
			g.Expect(admin.List(ctx, &calls, client.InNamespace(demoNS))).To(Succeed())
			for i := range calls.Items {
				c := &calls.Items[i]
				if c.Spec.Requester == requester && c.Spec.Tool == "sh" && !c.CreationTimestamp.Before(&since) &&
					c.Status.Phase == toolgatev1alpha1.PhaseAwaitingApproval {
					parked = c
				}
			}
			g.Expect(parked).NotTo(BeNil(), "no call of sh by %s awaits approval", requester)
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, parked))).To(Succeed()) })

		By("the person answers with the page's command (y at its prompt)")
		answer := runRecipe(ctx, strings.Replace(recipe(docrecipes.Approve), "CALL", parked.Name, 1), nil, "y\n")
		Expect(answer).To(ContainSubstring("Approved call " + parked.Name))

		var err error
		Eventually(exited).WithContext(ctx).WithTimeout(2 * callTimeout).Should(Receive(&err))
		printed := out.String()
		AddReportEntry("the Tasks recipe's output", printed)
		Expect(err).NotTo(HaveOccurred(), "node tasks.mjs wrote %q", printed)
		Expect(printed).To(HavePrefix("taskCreated working\n"))
		parkedAt := strings.Index(printed, "taskStatus input_required\n")
		Expect(parkedAt).To(BeNumerically(">", 0), "output %q", printed)
		Expect(strings.Index(printed[parkedAt:], "\nresult {")).To(BeNumerically(">", 0), "a result after input_required: %q", printed)
		Expect(waitTerminal(ctx, parked, callTimeout).Status.Result).NotTo(BeNil())
	}, SpecTimeout(4*time.Minute))

	It("starts the per-client sessions gateway as the page does: two MCP sessions of my-agent see two workspaces", func(ctx SpecContext) {
		l, err := net.Listen("tcp", docrecipes.SessionsAddress)
		Expect(err).NotTo(HaveOccurred(), "the recipe's gateway listens on %s: is one running already?", docrecipes.SessionsAddress)
		Expect(l.Close()).To(Succeed())
		waitToolRegistered(ctx, "ws-write-file") // config/examples/workspace.yaml

		// The recipe leaves the gateway running in the background (&): it is stopped with its
		// process group when the spec ends. Its output goes to a file, not a pipe, so that bash
		// returns when the recipe does.
		script := recipe(docrecipes.SessionsGateway)
		By("running the recipe:\n" + script)
		logFile, err := os.Create(filepath.Join(GinkgoT().TempDir(), "gateway.log"))
		Expect(err).NotTo(HaveOccurred())
		cmd := exec.CommandContext(ctx, "bash", "-c", script)
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, logFile, logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		Expect(cmd.Run()).To(Succeed())
		DeferCleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			log, _ := os.ReadFile(logFile.Name())
			AddReportEntry("the sessions gateway's log", string(log), ReportEntryVisibilityFailureOrVerbose)
		})
		sessionsURL := "http://" + docrecipes.SessionsAddress + "/"
		waitServing(ctx, sessionsURL)
		twoSessionsTwoWorkspaces(ctx, sessionsURL, token, requester, docrecipes.SessionKey(recipe(docrecipes.SessionsKey)))
	}, SpecTimeout(5*time.Minute))
})
