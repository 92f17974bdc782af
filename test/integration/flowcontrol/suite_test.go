// Package flowcontrol_test proves that toolgate's API Priority and Fairness objects
// (config/flowcontrol, the chart's apiPriorityAndFairness defaults) classify requests as
// they promise on a real kube-apiserver: every request of the operator's ServiceAccount goes
// to the toolgate-operator level, agents' ToolCall writes to toolgate-agents, and nothing
// else changes. The API server names the FlowSchema and priority level that classified each
// request in its response headers; the specs compare them with the objects' UIDs.
package flowcontrol_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

var env *toolgatetest.Env

func TestFlowControl(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "API Priority and Fairness Suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	env = suite.Start()
	objs, err := toolgatetest.FlowControlObjects()
	Expect(err).NotTo(HaveOccurred())
	for _, obj := range objs {
		Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}
})

var _ = AfterSuite(func() {
	Expect(env.Stop()).To(Succeed())
})
