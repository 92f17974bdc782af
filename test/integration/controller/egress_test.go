package controller_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/egressgrant"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/egress"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

var _ = Describe("Egress proxy: a tool with sandbox.egress.allow", Label("egress", "networkpolicy", "restart"), Serial, func() {
	var (
		opts      egressgrant.ProxyOptions
		mu        sync.Mutex
		asked     []string // "METHOD path?query" of each records request with a valid token
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
			if strings.HasSuffix(r.URL.Path, "/pod") { // the Pod's binding (egress_inject_test.go)
				w.WriteHeader(http.StatusNoContent)
				return
			}
			asked = append(asked, r.Method+" "+r.URL.RequestURI())
			_ = json.NewEncoder(w).Encode(egress.Record{Destinations: []egress.Destination{
				{Host: "allowed.test", Port: 443, Allowed: 2},
				{Host: "other.test", Port: 443, Refused: 1, Reason: egress.RefusedNotAllowed},
			}})
		}))
		DeferCleanup(records.Close)
		opts = egressgrant.ProxyOptions{URL: "http://10.0.0.12:3128", RecordsURL: records.URL, Key: key,
			Namespace: "toolgate-system", PodLabels: map[string]string{"app.kubernetes.io/component": "egress-proxy"}}
		call := CallOptions{EgressProxy: EgressProxy{URL: opts.URL, RecordsURL: opts.RecordsURL, Key: opts.Key,
			Namespace: opts.Namespace, PodLabels: opts.PodLabels}}
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

		By("the NetworkPolicy that allows only the proxy, as egressgrant.ProxyPolicies builds it for the tool Pods that go out through the proxy alone")
		proxyOnly := metav1.LabelSelector{MatchLabels: map[string]string{podcontract.LabelManagedBy: podcontract.ManagedByValue, podcontract.LabelNetwork: podcontract.NetworkProxy}}
		want := egressgrant.ProxyPolicies(ns, opts, proxyOnly)[0]
		Expect(getPolicy(ctx, ns, egressgrant.ProxyPolicyName).Spec).To(Equal(want.Spec))

		By("the Pod: labelled for that policy, the four proxy variables carrying a grant for this call only")
		job := &batchv1.Job{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}, job)).To(Succeed())
		Expect(job.Spec.Template.Labels).To(HaveKeyWithValue(podcontract.LabelNetwork, podcontract.NetworkProxy))
		env := map[string]string{}
		for _, e := range containerNamed(job.Spec.Template.Spec, podcontract.ToolContainerName).Env {
			env[e.Name] = e.Value
		}
		proxyURL := env[podcontract.EnvHTTPSProxy]
		for _, name := range []string{podcontract.EnvHTTPProxy, podcontract.EnvHTTPSProxyLower, podcontract.EnvHTTPProxyLower} {
			Expect(env).To(HaveKeyWithValue(name, proxyURL))
		}
		Expect(mustParseURL(proxyURL).Host).To(Equal("10.0.0.12:3128"))
		grant := grantOf(job, opts.Key)
		Expect(grant.UID).To(Equal(string(call.UID)))
		Expect(grant.Attempt).To(BeEquivalentTo(1))
		Expect(grant.Allow).To(Equal([]egress.Rule{{Host: "allowed.test", Port: 443}, {Host: "*.corp.test", Port: 8443}}))
		Expect(job.Spec.Template.Spec.HostAliases).To(BeEmpty(), "an address needs no hostAlias")

		By("status.attempts[0].egress is what the proxy recorded, read with the records token as the grant was ended")
		Expect(call.Status.Attempts[0].Egress).NotTo(BeNil())
		Expect(call.Status.Attempts[0].Egress.Destinations).To(Equal([]v1alpha1.EgressDestination{
			{Host: "allowed.test", Port: 443, Allowed: 2},
			{Host: "other.test", Port: 443, Refused: 1, Reason: egress.RefusedNotAllowed},
		}))
		mu.Lock()
		defer mu.Unlock()
		Expect(asked).To(Equal([]string{endRequest(call, grant)}), "one request: end the grant until its expiry, answer the record")
		Expect(badTokens).To(BeZero())
	})

	It("ends the grant of an attempt cancelled while it runs", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("long", Outcome{Hold: true})
		create(ctx, MakeTool("long", ns).Image("example/long:1").Command("/long").EgressAllow("allowed.test", 443).Obj(),
			MakeToolCall("c", ns).Tool("long").Requester(AdminUser).Args(map[string]any{}).Obj())
		job := &batchv1.Job{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}, job)).To(Succeed())
			g.Expect(job.Status.Active).To(BeNumerically("==", 1), "the Pod runs")
		}).WithContext(ctx).Should(Succeed())
		grant := grantOf(job, opts.Key)
		mu.Lock()
		Expect(asked).To(BeEmpty(), "nothing ends a running attempt's grant")
		mu.Unlock()

		Expect(cancelAs(ctx, k8sClient, ns, "c")).To(Succeed())
		call := waitTerminal(ctx, ns, "c")
		expectCancelled(call, pipeline.CancelledWhileRunning)
		Expect(call.Status.Attempts[0].Egress).NotTo(BeNil())
		mu.Lock()
		defer mu.Unlock()
		// Ending a grant is idempotent: a terminal write that lost a race and was retried asks
		// again, for the same attempt and expiry.
		Expect(asked).NotTo(BeEmpty())
		Expect(asked).To(HaveEach(endRequest(call, grant)))
	})

	It("leaves a network Egress tool without an allow list as it was: no proxy, the egress-only policy", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Network(v1alpha1.NetworkEgress).Obj(),
			MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "hi"}).Obj())
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		job := &batchv1.Job{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}, job)).To(Succeed())
		Expect(job.Spec.Template.Labels).To(HaveKeyWithValue(podcontract.LabelNetwork, podcontract.NetworkEgress))
		Expect(containerNamed(job.Spec.Template.Spec, podcontract.ToolContainerName).Env).NotTo(ContainElement(HaveField("Name", podcontract.EnvHTTPSProxy)))
		Expect(call.Status.Attempts[0].Egress).To(BeNil())
	})
})

// grantOf is the grant in a tool Job's proxy URL, verified with key.
func grantOf(job *batchv1.Job, key []byte) egress.Grant {
	GinkgoHelper()
	for _, e := range containerNamed(job.Spec.Template.Spec, podcontract.ToolContainerName).Env {
		if e.Name == podcontract.EnvHTTPSProxy {
			pass, _ := mustParseURL(e.Value).User.Password()
			g, err := egress.Verify(key, pass, fakeClock.Now())
			Expect(err).NotTo(HaveOccurred())
			return g
		}
	}
	Fail("no " + podcontract.EnvHTTPSProxy + " in the Job")
	return egress.Grant{}
}

func mustParseURL(s string) *url.URL {
	GinkgoHelper()
	u, err := url.Parse(s)
	Expect(err).NotTo(HaveOccurred())
	return u
}

// endRequest is the records request that ends the call's first attempt's grant until the
// expiry it was signed with.
func endRequest(call *v1alpha1.ToolCall, grant egress.Grant) string {
	return "POST /records/" + string(call.UID) + "/1/end?until=" + strconv.FormatInt(grant.Expires, 10)
}

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
