package gateway_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// bindAgentRole gives user, in ns only, what the toolgate-agent ClusterRole gives (and
// delete on toolcalls, for cancellation): no access to ClusterTools.
func bindAgentRole(ctx SpecContext, ns, user string) {
	create(ctx,
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"toolcalls"}, Verbs: []string{"create", "get", "list", "watch", "delete"}},
				{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"tools", "toolscopes"}, Verbs: []string{"get", "list", "watch"}},
			},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "agent"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		})
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
