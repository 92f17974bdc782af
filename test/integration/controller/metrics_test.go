package controller_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/toolgate/toolgate/config/rbac"
	"github.com/toolgate/toolgate/internal/metrics/serving"
)

// applyShippedClusterRole creates a ClusterRole of config/rbac and binds it to subject.
func applyShippedClusterRole(ctx SpecContext, manifest []byte, binding string, subject rbacv1.Subject) {
	role := &rbacv1.ClusterRole{}
	Expect(yaml.Unmarshal(manifest, role)).To(Succeed())
	if err := k8sClient.Create(ctx, role); !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(k8sClient.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: binding},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{subject},
	})).To(Succeed())
}

// eventuallyAllowed waits until RBAC lets user do what attrs say (bindings take a moment to
// reach the authorizer; the metrics filter caches a denial for 30 s, so ask first).
func eventuallyAllowed(ctx SpecContext, cs kubernetes.Interface, user string, attrs authorizationv1.SubjectAccessReviewSpec) {
	attrs.User = user
	Eventually(func(g Gomega) {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: attrs}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sar.Status.Allowed).To(BeTrue(), "%s: %s", user, sar.Status.Reason)
	}).WithContext(ctx).Should(Succeed())
}

// freeAddress is a loopback address with a port nobody listens on.
func freeAddress() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	return addr
}

var _ = Describe("The metrics endpoint", Label("metrics", "rbac"), func() {
	It("answers only clients whose token may GET /metrics, as the operator's shipped roles allow", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		cs, err := kubernetes.NewForConfig(env.Config)
		Expect(err).NotTo(HaveOccurred())

		// The operator's identity has the shipped toolgate-metrics-auth role, nothing else.
		operator := "metrics-operator-" + ns
		operatorCfg, err := env.UserConfig(operator, nil)
		Expect(err).NotTo(HaveOccurred())
		applyShippedClusterRole(ctx, rbac.MetricsAuthRole, operator,
			rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: operator})
		// A scraper's ServiceAccount has toolgate-metrics-reader; a stranger's has nothing.
		for _, sa := range []string{"scraper", "stranger"} {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		applyShippedClusterRole(ctx, rbac.MetricsReaderRole, "scraper-"+ns,
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns})
		token := func(sa string) string {
			tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			return tr.Status.Token
		}
		scraper, stranger := token("scraper"), token("stranger")
		eventuallyAllowed(ctx, cs, operator, authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"}})
		eventuallyAllowed(ctx, cs, operator, authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"}})
		eventuallyAllowed(ctx, cs, "system:serviceaccount:"+ns+":scraper", authorizationv1.SubjectAccessReviewSpec{
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}})

		// The metrics server exactly as cmd/manager configures it, acting as the operator.
		addr := freeAddress()
		httpClient, err := rest.HTTPClientFor(operatorCfg)
		Expect(err).NotTo(HaveOccurred())
		srv, err := metricsserver.NewServer(serving.Options(addr, true, false, ""), operatorCfg, httpClient)
		Expect(err).NotTo(HaveOccurred())
		srvCtx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Start(srvCtx) }()
		DeferCleanup(func() {
			stop()
			Eventually(done).Should(Receive(BeNil()))
		})

		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		// scrape returns the answer's status, body and WWW-Authenticate challenge.
		scrape := func(bearer string) (int, string, string, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
			if err != nil {
				return 0, "", "", err
			}
			if bearer != "" {
				req.Header.Set("Authorization", "Bearer "+bearer)
			}
			resp, err := client.Do(req)
			if err != nil {
				return 0, "", "", err
			}
			defer func() { _ = resp.Body.Close() }()
			body, err := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body), resp.Header.Get("WWW-Authenticate"), err
		}
		status := func(bearer string) func() (int, error) {
			return func() (int, error) {
				code, _, _, err := scrape(bearer)
				return code, err
			}
		}

		By("refusing a request without a token (the server is HTTPS from its first answer)")
		Eventually(status("")).WithContext(ctx).Should(Equal(http.StatusUnauthorized))
		By("refusing a token the API server does not know with 401 (controller-runtime's own filter answers 500)")
		code, body, challenge, err := scrape("not-a-token")
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(http.StatusUnauthorized), body)
		Expect(body).NotTo(ContainSubstring("# TYPE "))
		Expect(challenge).To(Equal(`Bearer error="invalid_token"`))
		_, _, challenge, err = scrape("")
		Expect(err).NotTo(HaveOccurred())
		Expect(challenge).To(Equal("Bearer"), "the challenge without a token")
		By("refusing a valid token without the metrics-reader role")
		Expect(status(stranger)()).To(Equal(http.StatusForbidden))
		By("serving the metrics to the scraper")
		code, body, _, err = scrape(scraper)
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(http.StatusOK), body)
		Expect(body).To(ContainSubstring("# TYPE "))
		By("answering plain HTTP with no metrics")
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(resp.Body.Close)
		Expect(resp.StatusCode).To(Equal(http.StatusBadRequest), "a TLS server's answer to plain HTTP")
	})
})
