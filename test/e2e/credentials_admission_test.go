package e2e

import (
	"context"
	"os/exec"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Issue 31 §3 on the real API server: a user who may edit Tools but not read Secrets may
// not change what runs with a Secret a Tool already names (the toolgate-credentials policy
// as the chart installs it).

// impersonating is a client acting as user, through the admin's kubeconfig (system:masters
// may impersonate).
func impersonating(user string) client.Client {
	GinkgoHelper()
	cfg, err := clientcmd.BuildConfigFromFlags("", adminCfg)
	Expect(err).NotTo(HaveOccurred())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: toolgatetest.NewScheme()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// bindRole gives user the rules in the demo namespace (a Role and RoleBinding named name,
// removed when the spec ends).
func bindRole(ctx context.Context, name, user string, rules ...rbacv1.PolicyRule) {
	GinkgoHelper()
	labels := map[string]string{e2eLabel: "true"}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNS, Labels: labels}, Rules: rules}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNS, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		Expect(admin.Create(ctx, o)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, o))).To(Succeed()) })
	}
}

var _ = Describe("credentials: who may change what runs with a Secret", Label("credentials", "admission"), func() {
	It("refuses a Tool editor without get on the Secret a change of image, command, env or sandbox, admits the description, and the image once granted", func(ctx SpecContext) {
		suffix := rand.String(5)
		secretName, editor := "e2e-cred-adm-"+suffix, "e2e-tool-editor-"+suffix
		credentialSecret(ctx, secretName, "token", "tg-e2e-adm-"+rand.String(12))
		name := "e2e-cred-adm-" + suffix
		createTool(ctx, toolgatetest.MakeTool(name, demoNS).Image(toolImage).RunnerInImage("").
			Command("/tools/echo").Description("echoes").SecretEnv("API_TOKEN", secretName, "token").Obj())
		bindRole(ctx, editor+"-tools", editor, rbacv1.PolicyRule{APIGroups: []string{toolgatev1alpha1.GroupVersion.Group},
			Resources: []string{"tools"}, Verbs: []string{"get", "list", "watch", "update", "patch"}})
		as := impersonating(editor)
		// The operator writes the Tool's status meanwhile: a conflict is read again and retried.
		update := func(edit func(*toolgatev1alpha1.Tool)) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				t := &toolgatev1alpha1.Tool{}
				Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, t)).To(Succeed())
				edit(t)
				return as.Update(ctx, t)
			})
		}
		refusal := editor + " may not get Secret " + secretName + " in namespace " + demoNS +
			": changing what runs with a credential or who may call it"

		By("the editor's description is admitted (the RBAC is in effect)")
		Eventually(func() error {
			return update(func(t *toolgatev1alpha1.Tool) { t.Spec.Description = "echoes, edited by " + editor })
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())

		By("what runs with the Secret is refused, naming it")
		for what, edit := range map[string]func(*toolgatev1alpha1.Tool){
			"image": func(t *toolgatev1alpha1.Tool) { t.Spec.Body.Image = "docker.io/library/busybox:1" },
			"command": func(t *toolgatev1alpha1.Tool) {
				t.Spec.Body.Command = []string{"/bin/busybox", "sh", "-c", `printf %s "$API_TOKEN" | rev`}
			},
			"env": func(t *toolgatev1alpha1.Tool) {
				t.Spec.Body.Env = append(t.Spec.Body.Env, toolgatev1alpha1.EnvVar{Name: "DEBUG", Value: "1"})
			},
			"sandbox": func(t *toolgatev1alpha1.Tool) { t.Spec.Sandbox.Network = toolgatev1alpha1.NetworkEgress },
		} {
			err := update(edit)
			Expect(toolgatetest.IsCredentialPolicyDenial(err)).To(BeTrue(), "%s: %v", what, err)
			Expect(err).To(MatchError(ContainSubstring(refusal)), what)
		}
		By("kubectl shows the editor the same refusal")
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", adminCfg, "--as", editor, "-n", demoNS, "patch", "tool", name,
			"--type", "merge", "-p", `{"spec":{"body":{"image":"docker.io/library/busybox:1"}}}`).CombinedOutput()
		Expect(err).To(HaveOccurred(), "%s", out)
		Expect(string(out)).To(ContainSubstring(refusal))
		stored := &toolgatev1alpha1.Tool{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, stored)).To(Succeed())
		Expect(stored.Spec.Body.Image).To(Equal(toolImage), "the body is the admin's")

		By("with get on the Secret, the editor may change the image")
		bindRole(ctx, editor+"-secret", editor, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"},
			Verbs: []string{"get"}, ResourceNames: []string{secretName}})
		Eventually(func() error {
			return update(func(t *toolgatev1alpha1.Tool) { t.Spec.Body.Image = toolImage + "-edited" })
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
	}, SpecTimeout(2*time.Minute))
})
