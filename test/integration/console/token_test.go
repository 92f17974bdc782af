package console_test

import (
	"net/http"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// approverToken creates a ServiceAccount bound to the shipped approver role in ns and
// returns its username and a token for audience.
func approverToken(ctx SpecContext, ns, name, audience string) (string, string) {
	GinkgoHelper()
	cr, err := ApproverRole.ClusterRole()
	Expect(err).NotTo(HaveOccurred())
	Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, cr))).To(Succeed())
	create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		})
	kube, err := kubernetes.NewForConfig(env.Config)
	Expect(err).NotTo(HaveOccurred())
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return "system:serviceaccount:" + ns + ":" + name, tr.Status.Token
}

var _ = Describe("the approval console with token sign-in (--auth token)", Label("console", "token"), func() {
	It("acts as each token's identity: a header or the sign-in form, and the approval is written as it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, askingEcho(ns)...)
		who, tok := approverToken(ctx, ns, "reviewer", "toolgate")
		_, otherAudience := approverToken(ctx, ns, "elsewhere", "another-service")
		call := parkedCall(ctx, ns, "by-token")
		// The console's own identity (admin) reviews tokens and impersonates.
		s := startConsole(ctx, AdminUser, "--auth", "token")
		Expect(s.Login).To(Equal(s.Base + "/login"))

		By("a bearer header: the page is the token's identity's, in its service account's namespace")
		c := browserless()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Base+"/", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+tok)
		p := do(c, req)
		Expect(p.Status).To(Equal(http.StatusOK))
		Expect(p.Body).To(ContainSubstring(`signed in as <b id="user">` + who + `</b>`))
		Expect(p.Body).To(ContainSubstring(`data-call="` + ns + `/by-token"`))

		By("a token for another audience, or none, is refused")
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, s.Base+"/events", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+otherAudience)
		Expect(do(c, req).Status).To(Equal(http.StatusUnauthorized))
		p = post(ctx, c, s.Base+"/login", url.Values{"token": {otherAudience}}, nil)
		Expect(p.Status).To(Equal(http.StatusUnauthorized))
		Expect(p.Body).To(ContainSubstring("not accept this token for audience"))

		By("the sign-in form: the token becomes the session cookie; Approve writes the approval as the token's identity")
		p = post(ctx, c, s.Base+"/login", url.Values{"token": {tok}}, nil)
		Expect(p.Status).To(Equal(http.StatusSeeOther))
		p = get(ctx, c, s.Base+"/")
		Expect(p.Status).To(Equal(http.StatusOK))
		p = post(ctx, c, s.Base+"/calls/"+ns+"/by-token/decision", decisionForm(call, csrfOf(p), "Approve", ""), nil)
		Expect(p.Status).To(Equal(http.StatusOK), p.Body)
		approval := &v1alpha1.ToolCallApproval{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(call), approval)).To(Succeed())
		Expect(approval.Spec.Approver).To(Equal(who))
		Eventually(func() v1alpha1.ToolCallPhase { return phaseOf(ctx, ns, "by-token") }).WithContext(ctx).WithTimeout(LongTimeout).Should(Equal(v1alpha1.PhaseSucceeded))

		By("signing out ends the session")
		p = post(ctx, c, s.Base+"/logout", url.Values{"csrf": {csrfOf(p)}}, nil)
		Expect(p.Status).To(Equal(http.StatusSeeOther))
		Expect(get(ctx, c, s.Base+"/").Location).To(Equal("/login"))
	})
})
