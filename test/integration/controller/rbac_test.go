package controller_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// bindShippedRole applies config/rbac/<file> and binds it to user in ns; it returns the
// user's client.
func bindShippedRole(ctx SpecContext, ns, file, user string) client.Client {
	root, err := ModuleRoot()
	Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", file))
	Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	Expect(yaml.Unmarshal(data, role)).To(Succeed())
	if err := k8sClient.Create(ctx, role); !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role.Name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})
	c, err := env.AddUser(user, nil)
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("The shipped agent and approver roles", Label("rbac", "approval"), func() {
	It("let an agent call but not approve nor write status, and let an approver approve", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		agent := bindShippedRole(ctx, ns, "agent_role.yaml", "robot")
		approver := bindShippedRole(ctx, ns, "approver_role.yaml", "carol")
		create(ctx, echoTool(ns).Obj(),
			MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).VerdictRule("always", "true", v1alpha1.VerdictAsk).Obj())
		Expect(agent.Create(ctx, MakeToolCall("c", ns).Tool("echo").Requester("robot").Args(map[string]any{"text": "x"}).Obj())).To(Succeed())
		call := &v1alpha1.ToolCall{}
		Eventually(func(g Gomega) {
			g.Expect(agent.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, call)).To(Succeed())
			g.Expect(call).To(HavePhase(v1alpha1.PhaseAwaitingApproval))
		}).WithContext(ctx).Should(Succeed())

		err := agent.Create(ctx, MakeToolCallApproval("c", ns).Approver("robot").ArgumentsDigest(call.Status.ArgumentsDigest).Obj())
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "an agent cannot approve: %v", err)
		call.Status.Phase = v1alpha1.PhaseRunning
		err = agent.Status().Update(ctx, call)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "an agent cannot write status: %v", err)

		Expect(approver.Create(ctx, MakeToolCallApproval("c", ns).Approver("carol").
			ArgumentsDigest(call.Status.ArgumentsDigest).Obj())).To(Succeed())
		Expect(waitTerminal(ctx, ns, "c")).To(HavePhase(v1alpha1.PhaseSucceeded))
	})
})
