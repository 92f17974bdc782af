// Package console_test runs `toolgate console` in-process (the CLI's command, with its
// approve and describe code) against a real kube-apiserver (envtest) with toolgate's
// reconcilers and the test kit's simulated Kubelet, and drives it over HTTP — and, in
// browser_test.go, in headless Chromium. Each Describe is one behaviour, in its own
// namespace; each spec starts its own console as one user.
package console_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/cli"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

var (
	env         *toolgatetest.Env
	k8sClient   client.Client
	mgr         *toolgatetest.Manager
	kubeconfigs *suite.Kubeconfigs
	clients     = map[string]client.Client{}
)

func TestConsole(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Console Suite")
}

var _ = BeforeSuite(func() {
	env = suite.Start()
	k8sClient = env.Client
	mgr = suite.StartManager(env, toolgatetest.ManagerOptions{})
	kubeconfigs = suite.NewKubeconfigs(env, "toolgate-console-")
	// alice requests calls (an editor); carol approves them with the shipped approver role,
	// bound per namespace (so she may not list calls across namespaces).
	addUser("alice", []string{toolgatetest.EditorsGroup})
	addUser("carol", nil)
})

var _ = AfterSuite(func() {
	Expect(mgr.Stop()).To(Succeed())
	Expect(env.Stop()).To(Succeed())
	Expect(kubeconfigs.Remove()).To(Succeed())
})

// addUser writes the user's kubeconfig and keeps a client acting as it.
func addUser(name string, groups []string) {
	var err error
	clients[name], err = client.New(kubeconfigs.AddUser(name, groups), client.Options{Scheme: k8sClient.Scheme()})
	Expect(err).NotTo(HaveOccurred())
}

// server is a running console: its base URL and sign-in link.
type server struct {
	Base, Login string
	Out         *gbytes.Buffer
}

var signIn = regexp.MustCompile(`Serving the toolgate console at (http://\S+)/ as .*\nSign in: (\S+)\n`)

// startConsole runs `toolgate console --port 0` as user (with args after it) until the
// spec ends.
func startConsole(ctx SpecContext, user string, args ...string) server {
	GinkgoHelper()
	path := kubeconfigs.Path(user)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	out, errOut := gbytes.NewBuffer(), gbytes.NewBuffer()
	done := make(chan int, 1)
	go func() {
		defer GinkgoRecover()
		argv := append([]string{"--kubeconfig", path, "console", "--port", "0"}, args...)
		done <- cli.Execute(runCtx, argv, genericiooptions.IOStreams{In: bytes.NewReader(nil), Out: out, ErrOut: errOut})
	}()
	DeferCleanup(func() {
		cancel()
		Eventually(done).Should(Receive(Equal(cli.ExitOK)), "the console's exit; stderr: %s", errOut.Contents())
	})
	Eventually(out).WithContext(ctx).Should(gbytes.Say(`Sign in: `), "stderr: %s", errOut.Contents())
	Eventually(func() []string { return signIn.FindStringSubmatch(string(out.Contents())) }).WithContext(ctx).Should(HaveLen(3))
	m := signIn.FindStringSubmatch(string(out.Contents()))
	return server{Base: m[1], Login: m[2], Out: out}
}

// browserless is an HTTP client with a cookie jar that does not follow redirects.
func browserless() *http.Client {
	jar, err := cookiejar.New(nil)
	Expect(err).NotTo(HaveOccurred())
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func newNamespace(ctx SpecContext) string { return suite.NewNamespace(ctx, env, "console") }

func create(ctx SpecContext, objs ...client.Object) {
	GinkgoHelper()
	toolgatetest.Create(ctx, k8sClient, objs...)
}

// askingEcho is an echo tool with a presentation, and a policy that asks a person before
// it echoes "deploy".
func askingEcho(ns string) []client.Object {
	tool := toolgatetest.MakeTool("echo", ns).Image("example/echo:1").Command("/echo").
		Description("Returns its arguments.").ReadOnly(true).ConcurrencySafe(true).
		Presentation(`'echo ' + arguments.text`, `'echoed ' + string(result.content.text)`).
		Parameters(map[string]any{
			"type":       "object",
			"properties": map[string]any{"text": map[string]any{"type": "string", "maxLength": 100}},
			"required":   []string{"text"},
		}).Obj()
	policy := toolgatetest.MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).
		Rule(v1alpha1.PolicyRule{Name: "deploys", Expression: `arguments.text == "deploy"`, Verdict: v1alpha1.VerdictAsk,
			Message: "deploying needs a human"}).Obj()
	return []client.Object{tool, policy}
}

// parkedCall creates alice's call of echo "deploy" and waits until it awaits approval.
func parkedCall(ctx SpecContext, ns, name string) *v1alpha1.ToolCall {
	GinkgoHelper()
	Expect(clients["alice"].Create(ctx, toolgatetest.MakeToolCall(name, ns).Tool("echo").Requester("alice").
		Args(map[string]any{"text": "deploy"}).Obj())).To(Succeed())
	call := &v1alpha1.ToolCall{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, call)).To(Succeed())
		g.Expect(call).To(toolgatetest.HavePhase(v1alpha1.PhaseAwaitingApproval))
	}).WithContext(ctx).Should(Succeed())
	return call
}

// phaseOf reads a call's phase now.
func phaseOf(ctx context.Context, ns, name string) v1alpha1.ToolCallPhase {
	call := &v1alpha1.ToolCall{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, call); err != nil {
		return ""
	}
	return call.Status.Phase
}
