package controller_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/pkg/egress"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

var _ = Describe("Egress proxy: a tool with sandbox.egress.allow", Label("egress", "networkpolicy", "restart"), Serial, func() {
	var (
		opts      controllers.EgressProxyOptions
		mu        sync.Mutex
		asked     []string // records paths the operator read, with a valid token
		badTokens int
	)

	BeforeEach(func() {
		asked, badTokens = nil, 0
		key := []byte(strings.Repeat("e", 32))
		records := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if r.Header.Get("Authorization") != "Bearer "+egress.RecordsToken(key) {
				badTokens++
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			asked = append(asked, r.URL.Path)
			_ = json.NewEncoder(w).Encode(egress.Record{Destinations: []egress.Destination{
				{Host: "allowed.test", Port: 443, Allowed: 2},
				{Host: "other.test", Port: 443, Refused: 1, Reason: egress.RefusedNotAllowed},
			}})
		}))
		DeferCleanup(records.Close)
		opts = controllers.EgressProxyOptions{URL: "http://10.0.0.12:3128", RecordsURL: records.URL, Key: key,
			Namespace: "toolgate-system", PodLabels: map[string]string{"app.kubernetes.io/component": "egress-proxy"}}
		call := controllers.DefaultCallOptions()
		call.EgressProxy = opts
		Expect(mgr.Stop()).To(Succeed())
		mgr = suite.StartManager(env, ManagerOptions{Clock: fakeClock, Kubelet: kubelet, Call: call})
		DeferCleanup(func() {
			Expect(mgr.Stop()).To(Succeed())
			startManager()
		})
	})

	It("runs in a Pod that reaches only the proxy, with its grant in the proxy variables, and the call keeps the proxy's record", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).EgressAllow("allowed.test", 443).EgressAllow("*.corp.test", 8443).Obj(),
			MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "hi"}).Obj())
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))

		By("the NetworkPolicy that allows only the proxy, as controllers.EgressProxyPolicies builds it")
		want := controllers.EgressProxyPolicies(ns, opts)[0]
		Expect(getPolicy(ctx, ns, controllers.EgressProxyPolicyName).Spec).To(Equal(want.Spec))

		By("the Pod: labelled for that policy, the four proxy variables carrying a grant for this call only")
		job := &batchv1.Job{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: controllers.JobName("c", 1)}, job)).To(Succeed())
		Expect(job.Spec.Template.Labels).To(HaveKeyWithValue(podcontract.LabelNetwork, podcontract.NetworkProxy))
		env := map[string]string{}
		for _, e := range job.Spec.Template.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		proxyURL := env[podcontract.EnvHTTPSProxy]
		for _, name := range []string{podcontract.EnvHTTPProxy, podcontract.EnvHTTPSProxyLower, podcontract.EnvHTTPProxyLower} {
			Expect(env).To(HaveKeyWithValue(name, proxyURL))
		}
		u, err := url.Parse(proxyURL)
		Expect(err).NotTo(HaveOccurred())
		Expect(u.Host).To(Equal("10.0.0.12:3128"))
		pass, _ := u.User.Password()
		grant, err := egress.Verify(opts.Key, pass, fakeClock.Now())
		Expect(err).NotTo(HaveOccurred())
		Expect(grant.UID).To(Equal(string(call.UID)))
		Expect(grant.Attempt).To(BeEquivalentTo(1))
		Expect(grant.Allow).To(Equal([]egress.Rule{{Host: "allowed.test", Port: 443}, {Host: "*.corp.test", Port: 8443}}))
		Expect(job.Spec.Template.Spec.HostAliases).To(BeEmpty(), "an address needs no hostAlias")

		By("status.attempts[0].egress is what the proxy recorded, read with the records token")
		Expect(call.Status.Attempts[0].Egress).NotTo(BeNil())
		Expect(call.Status.Attempts[0].Egress.Destinations).To(Equal([]v1alpha1.EgressDestination{
			{Host: "allowed.test", Port: 443, Allowed: 2},
			{Host: "other.test", Port: 443, Refused: 1, Reason: egress.RefusedNotAllowed},
		}))
		mu.Lock()
		defer mu.Unlock()
		Expect(asked).To(ContainElement("/records/" + string(call.UID) + "/1"))
		Expect(badTokens).To(BeZero())
	})

	It("leaves a network Egress tool without an allow list as it was: no proxy, the egress-only policy", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Network(v1alpha1.NetworkEgress).Obj(),
			MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "hi"}).Obj())
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		job := &batchv1.Job{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: controllers.JobName("c", 1)}, job)).To(Succeed())
		Expect(job.Spec.Template.Labels).To(HaveKeyWithValue(podcontract.LabelNetwork, podcontract.NetworkEgress))
		Expect(job.Spec.Template.Spec.Containers[0].Env).NotTo(ContainElement(HaveField("Name", podcontract.EnvHTTPSProxy)))
		Expect(call.Status.Attempts[0].Egress).To(BeNil())
	})
})

var _ = Describe("Egress proxy: none configured", Label("egress", "networkpolicy"), func() {
	It("refuses a call of a tool with sandbox.egress instead of running it with open egress", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).EgressAllow("allowed.test", 443).Obj(),
			MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "hi"}).Obj())
		call := expectRefusedUnisolated(ctx, ns, "c")
		Expect(conditionMessage(call, v1alpha1.ConditionExecuted)).To(ContainSubstring("--egress-proxy-url"))
		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		Expect(pods.Items).To(BeEmpty())
	})
})
