// Package gateway_test drives the MCP gateway with the go-sdk's own client, over the
// in-memory transport and streamable HTTP, against toolgate's reconcilers on envtest with
// the test kit's simulated Kubelet. Each Describe is one behaviour, in its own namespace.
package gateway_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/pkg/agentclient"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

// agentUser is the identity the gateway acts as in most specs (full toolgate rights).
const agentUser = "agent-alice"

var (
	env       *toolgatetest.Env
	k8sClient client.Client
	mgr       *toolgatetest.Manager
	kubelet   *toolgatetest.Kubelet
	agentCfg  *rest.Config
)

func TestGateway(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "MCP Gateway Suite")
}

var _ = BeforeSuite(func() {
	env = suite.Start()
	k8sClient = env.Client
	mgr = suite.StartManager(env, toolgatetest.ManagerOptions{})
	kubelet = mgr.Kubelet
	var err error
	agentCfg, err = env.UserConfig(agentUser, []string{toolgatetest.EditorsGroup})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	Expect(mgr.Stop()).To(Succeed())
	Expect(env.Stop()).To(Succeed())
})

func newNamespace(ctx SpecContext) string { return suite.NewNamespace(ctx, env, "gw") }

func create(ctx SpecContext, objs ...client.Object) {
	GinkgoHelper()
	toolgatetest.Create(ctx, k8sClient, objs...)
}

// gatewayOptions are what a spec changes about its gateway.
type gatewayOptions struct {
	cfg     *rest.Config // default agentCfg
	scope   string
	session string
	// sessionPerClient is Options.SessionPerClient.
	sessionPerClient bool
	waitBound        time.Duration
	// progress is Options.ProgressInterval (0: the gateway's default).
	progress time.Duration
}

// startGateway starts a gateway for ns that lives until the spec ends.
func startGateway(ctx SpecContext, ns string, o gatewayOptions) *gateway.Gateway {
	cfg := o.cfg
	if cfg == nil {
		cfg = agentCfg
	}
	g, err := newGateway(agentClient(ctx, cfg, ns), o)
	Expect(err).NotTo(HaveOccurred())
	return g
}

// agentClient is the client side of toolgate for the user of cfg, in ns.
func agentClient(ctx SpecContext, cfg *rest.Config, ns string) *agentclient.Client {
	ac, err := agentclient.New(ctx, cfg, ns)
	Expect(err).NotTo(HaveOccurred())
	return ac
}

// newGateway starts a gateway whose watches end with the spec.
func newGateway(ac *agentclient.Client, o gatewayOptions) (*gateway.Gateway, error) {
	gctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	return gateway.New(gctx, gateway.Options{
		Client: ac, Scope: o.scope, Session: o.session, SessionPerClient: o.sessionPerClient, WaitBound: o.waitBound, ProgressInterval: o.progress,
		Logger: GinkgoLogr.WithName("gateway"),
	})
}

// echoTool is a tool whose simulated body prints its arguments (the Kubelet's default).
func echoTool(ns string) *toolgatetest.ToolWrapper {
	return toolgatetest.MakeTool("echo", ns).Image("example/echo:1").Command("/echo").
		Description("Returns its arguments.").
		Parameters(map[string]any{
			"type":       "object",
			"properties": map[string]any{"text": map[string]any{"type": "string", "maxLength": 100}},
			"required":   []string{"text"},
		})
}

// plainTool is a tool with no schema, named name, whose outcome a spec scripts.
func plainTool(name, ns string) *toolgatetest.ToolWrapper {
	return toolgatetest.MakeTool(name, ns).Image("example/" + name + ":1").Command("/" + name)
}

// toolCalls lists the ToolCalls of ns.
func toolCalls(ctx context.Context, ns string) []v1alpha1.ToolCall {
	list := &v1alpha1.ToolCallList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}
