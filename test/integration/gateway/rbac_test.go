package gateway_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// bindAgentRole binds the shipped toolgate-agent ClusterRole to user in ns only (a
// RoleBinding: no access to ClusterTools).
func bindAgentRole(ctx SpecContext, ns, user string) {
	_, err := env.BindUserRole(ctx, ns, AgentRole, user)
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("A gateway whose identity may not read ClusterTools", Label("rbac"), func() {
	It("starts and serves the namespace's tools; a permitted identity also sees the ClusterTools", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		clusterTool := MakeClusterTool("gw-cluster-" + utilrand.String(5)).Image("example/c:1").Obj()
		create(ctx, echoTool(ns).Obj(), clusterTool)
		DeferCleanup(func(ctx SpecContext) { Expect(k8sClient.Delete(ctx, clusterTool)).To(Succeed()) })
		bindAgentRole(ctx, ns, "agent-bob")
		bobCfg, err := env.UserConfig("agent-bob", nil)
		Expect(err).NotTo(HaveOccurred())

		alice := connect(ctx, startGateway(ctx, ns, gatewayOptions{}), inMemory, "", nil)
		Eventually(func() []string { return toolNames(ctx, alice) }).WithContext(ctx).
			Should(ContainElements("echo", clusterTool.Name))

		bob := connect(ctx, startGateway(ctx, ns, gatewayOptions{cfg: bobCfg}), inMemory, "", nil)
		Eventually(func() []string { return toolNames(ctx, bob) }).WithContext(ctx).Should(ContainElement("echo"))
		Expect(toolNames(ctx, bob)).NotTo(ContainElement(clusterTool.Name))

		res := callTool(ctx, bob, "echo", map[string]any{"text": "as bob"})
		Expect(res.IsError).To(BeFalse(), text(res))
		Expect(callOf(ctx, ns, res).Spec.Requester).To(Equal("agent-bob"))
	})
})
