// Package tracing_test proves the operator's traces on envtest: the simulated Kubelet plays
// the Pods and an in-memory exporter receives the spans (internal/tracing, ManagerOptions.
// TraceExporter). The real-cluster spec against Jaeger is test/e2e/tracing_test.go.
package tracing_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

var env *toolgatetest.Env

func TestTracing(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Tracing Suite")
}

var _ = BeforeSuite(func() { env = suite.Start() })

var _ = AfterSuite(func() { Expect(env.Stop()).To(Succeed()) })

func create(ctx SpecContext, objs ...client.Object) {
	GinkgoHelper()
	toolgatetest.Create(ctx, env.Client, objs...)
}

func echoTool(ns string) *toolgatetest.ToolWrapper {
	return toolgatetest.MakeTool("echo", ns).Image("example/echo:1").Command("/echo")
}

func waitPhase(ctx SpecContext, ns, name string, terminal bool, phase v1alpha1.ToolCallPhase) *v1alpha1.ToolCall {
	GinkgoHelper()
	key := client.ObjectKey{Namespace: ns, Name: name}
	if terminal {
		return toolgatetest.WaitTerminal(ctx, env.Client, key)
	}
	call := &v1alpha1.ToolCall{}
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, call)).To(Succeed())
		g.Expect(call.Status.Phase).To(Equal(phase))
	}).WithContext(ctx).Should(Succeed())
	return call
}
