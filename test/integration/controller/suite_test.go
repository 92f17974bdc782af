// Package controller_test runs toolgate's reconcilers against a real kube-apiserver
// (envtest) with the test kit's simulated Kubelet playing the Job controller and kubelet.
// Each Describe is one behaviour, in its own namespace.
package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

var (
	env       *toolgatetest.Env
	k8sClient client.Client
	mgr       *toolgatetest.Manager
	kubelet   *toolgatetest.Kubelet
	// fakeClock drives approval windows and deadlines; it starts at the real time.
	fakeClock *clocktesting.FakeClock
)

func TestController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller Suite")
}

var _ = BeforeSuite(func() {
	env = suite.Start()
	k8sClient = env.Client
	fakeClock = clocktesting.NewFakeClock(time.Now())
	startManager()
})

// Each spec starts with the operator's clock at the real time: the API server dates
// approvals, and a clock an earlier spec stepped ahead would make them look stale.
var _ = BeforeEach(func() { fakeClock.SetTime(time.Now()) })

var _ = AfterSuite(func() {
	Expect(mgr.Stop()).To(Succeed())
	Expect(env.Stop()).To(Succeed())
})

// startManager starts the reconcilers (again), keeping the Kubelet and its scripts.
func startManager() {
	mgr = suite.StartManager(env, toolgatetest.ManagerOptions{Clock: fakeClock, Kubelet: kubelet})
	kubelet = mgr.Kubelet
}

func newNamespace(ctx SpecContext) string { return suite.NewNamespace(ctx, env, "tc") }

func create(ctx SpecContext, objs ...client.Object) {
	GinkgoHelper()
	toolgatetest.Create(ctx, k8sClient, objs...)
}

// echoTool is a plain tool whose simulated body prints its arguments.
func echoTool(ns string) *toolgatetest.ToolWrapper {
	return toolgatetest.MakeTool("echo", ns).Image("example/echo:1").Command("/echo").
		Parameters(map[string]any{
			"type":       "object",
			"properties": map[string]any{"text": map[string]any{"type": "string", "maxLength": 100}},
			"required":   []string{"text"},
		})
}

// waitTerminal waits until the call is terminal and returns it (toolgatetest.WaitTerminal).
func waitTerminal(ctx SpecContext, ns, name string) *v1alpha1.ToolCall {
	GinkgoHelper()
	return toolgatetest.WaitTerminal(ctx, k8sClient, client.ObjectKey{Namespace: ns, Name: name})
}

func conditionTypes(conds []metav1.Condition) []string {
	out := make([]string, 0, len(conds))
	for _, c := range conds {
		out = append(out, c.Type)
	}
	return out
}

// explain renders a call's conditions and result for failure messages.
var explain = toolgatetest.Explain

// finish ends a held Pod once the simulated Kubelet has started it.
func finish(ctx SpecContext, ns, job string, o toolgatetest.Outcome) {
	Eventually(func() error { return kubelet.Finish(ctx, ns, job, o) }).WithContext(ctx).Should(Succeed())
}
