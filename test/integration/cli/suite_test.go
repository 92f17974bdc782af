// Package cli_test runs the toolgate CLI in-process against a real kube-apiserver (envtest)
// with toolgate's reconcilers and the test kit's simulated Kubelet: each spec builds the
// root command with its own streams and arguments, connecting through a kubeconfig file
// written for one user, and asserts what it prints and its exit code. Each Describe is one
// behaviour, in its own namespace.
package cli_test

import (
	"bytes"
	"context"
	"strings"
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
	env       *toolgatetest.Env
	k8sClient client.Client
	mgr       *toolgatetest.Manager
	kubelet   *toolgatetest.Kubelet
	// kubeconfigs holds one kubeconfig per user.
	kubeconfigs *suite.Kubeconfigs
)

func TestCLI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CLI Suite")
}

var _ = BeforeSuite(func() {
	env = suite.Start()
	k8sClient = env.Client
	mgr = suite.StartManager(env, toolgatetest.ManagerOptions{})
	kubelet = mgr.Kubelet
	kubeconfigs = suite.NewKubeconfigs(env, "toolgate-cli-")
	for _, editor := range []string{"alice", "bob"} {
		kubeconfigs.AddUser(editor, []string{toolgatetest.EditorsGroup})
	}
	// nobody is authenticated but has no RBAC at all; robot and carol get the shipped
	// agent and approver roles per namespace (bindShippedRole).
	for _, user := range []string{"nobody", "robot", "carol"} {
		kubeconfigs.AddUser(user, nil)
	}
})

var _ = AfterSuite(func() {
	Expect(mgr.Stop()).To(Succeed())
	Expect(env.Stop()).To(Succeed())
	Expect(kubeconfigs.Remove()).To(Succeed())
})

// result is what one run of the CLI printed and its exit code.
type result struct {
	Code   int
	Out    string
	ErrOut string
}

// toolgate runs the CLI as user in namespace ns with args, and stdin as its input.
func toolgate(ctx context.Context, user, ns, stdin string, args ...string) result {
	var out, errOut bytes.Buffer
	code := cli.Execute(ctx, withConnection(user, ns, args), genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	GinkgoWriter.Printf("$ toolgate %s  # as %s\n%s%s=> exit %d\n", strings.Join(args, " "), user, out.String(), errOut.String(), code)
	return result{Code: code, Out: out.String(), ErrOut: errOut.String()}
}

// background runs the CLI in a goroutine, its output going to buffers the spec can watch
// while it runs; the exit code arrives on the channel.
func background(ctx context.Context, user, ns string, args ...string) (out, errOut *gbytes.Buffer, code <-chan int) {
	out, errOut = gbytes.NewBuffer(), gbytes.NewBuffer()
	done := make(chan int, 1)
	go func() {
		defer GinkgoRecover()
		done <- cli.Execute(ctx, withConnection(user, ns, args), genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut})
	}()
	return out, errOut, done
}

func withConnection(user, ns string, args []string) []string {
	return append([]string{"--kubeconfig", kubeconfigs.Path(user), "-n", ns}, args...)
}

func newNamespace(ctx SpecContext) string { return suite.NewNamespace(ctx, env, "cli") }

func create(ctx SpecContext, objs ...client.Object) {
	GinkgoHelper()
	toolgatetest.Create(ctx, k8sClient, objs...)
}

// bindShippedRole binds the shipped ClusterRole to user in ns only.
func bindShippedRole(ctx SpecContext, ns string, role toolgatetest.UserRole, user string) {
	_, err := env.BindUserRole(ctx, ns, role, user)
	Expect(err).NotTo(HaveOccurred())
}

// echoTool is a tool whose simulated body prints its arguments.
func echoTool(ns string) *toolgatetest.ToolWrapper {
	return toolgatetest.MakeTool("echo", ns).Image("example/echo:1").Command("/echo").
		Description("Returns its arguments.").ReadOnly(true).ConcurrencySafe(true).
		Parameters(map[string]any{
			"type":       "object",
			"properties": map[string]any{"text": map[string]any{"type": "string", "maxLength": 100}},
			"required":   []string{"text"},
		})
}

// calls lists the ToolCalls of ns.
func calls(ctx context.Context, ns string) []v1alpha1.ToolCall {
	list := &v1alpha1.ToolCallList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// onlyCall waits until ns holds exactly one ToolCall in phase and returns it.
func onlyCall(ctx SpecContext, ns string, phase v1alpha1.ToolCallPhase) *v1alpha1.ToolCall {
	var call *v1alpha1.ToolCall
	Eventually(func(g Gomega) {
		items := calls(ctx, ns)
		g.Expect(items).To(HaveLen(1))
		call = &items[0]
		g.Expect(call).To(toolgatetest.HavePhase(phase))
	}).WithContext(ctx).WithTimeout(toolgatetest.LongTimeout).Should(Succeed()) // a call that runs waits on its Job
	return call
}
