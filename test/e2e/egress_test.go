/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/egress"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Egress only to named hosts (issue 24 §2). The egress proxy is installed by make up with
// charts/toolgate/ci/egress-values.yaml and the test hook egressProxy.testHosts mapping
// allowed.test and other.test to the node address, where this spec's HTTPS listener runs
// (the proxy's denyCIDRs there leave that address reachable; the tool Pod's own NetworkPolicy
// still excludes it).

// tlsHostListener serves HTTPS on the node address, port 443 when it can bind it (else any
// port), with a certificate for allowed.test, other.test and the address; it counts the
// requests it answered per Host. It returns the port, the CA (the certificate) as PEM and
// the counter.
func tlsHostListener(nodeIP string) (int32, string, func(host string) int) {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "toolgate e2e egress"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"allowed.test", "other.test"}, IPAddresses: []net.IP{net.ParseIP(nodeIP)},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	l, err := net.Listen("tcp", net.JoinHostPort(nodeIP, "443"))
	if err != nil {
		l, err = net.Listen("tcp", net.JoinHostPort(nodeIP, "0"))
	}
	Expect(err).NotTo(HaveOccurred())
	var mu sync.Mutex
	seen := map[string]int{}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host, _, err := net.SplitHostPort(r.Host)
			if err != nil { // no port in Host: the default port, 443
				host = r.Host
			}
			mu.Lock()
			seen[host]++
			mu.Unlock()
			fmt.Fprint(w, "egress e2e")
		})}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	DeferCleanup(func() { _ = srv.Close() })
	_, portText, _ := net.SplitHostPort(l.Addr().String())
	port, _ := strconv.Atoi(portText)
	count := func(host string) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[host]
	}
	return int32(port), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), count
}

type fetchResult struct {
	OK     bool   `json:"ok"`
	Status int    `json:"status"`
	Body   string `json:"body"`
	Error  string `json:"error"`
}

// fetchTool is the fetch tool allowed to reach allowed.test through the proxy.
const fetchTool = "e2e-fetch-allowed"

// fetchThrough runs fetchTool over urls and returns the call and each URL's result.
func fetchThrough(ctx context.Context, args map[string]any) (*toolgatev1alpha1.ToolCall, []fetchResult) {
	GinkgoHelper()
	got := waitTerminal(ctx, createCall(ctx, fetchTool, "", args), 2*time.Minute)
	Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", got.Status.Result)
	var content struct {
		Results []fetchResult `json:"results"`
	}
	Expect(json.Unmarshal(got.Status.Result.Content.Raw, &content)).To(Succeed())
	AddReportEntry(fetchTool+" results", content.Results)
	return got, content.Results
}

var _ = Describe("egress: only to named hosts, through the egress proxy", Label("egress", "networkpolicy"), Ordered, func() {
	var (
		nodeIP string
		port   int32
		ca     string
		served func(string) int
	)

	BeforeEach(func(ctx SpecContext) {
		By("the egress proxy is installed (make up: charts/toolgate/ci/egress-values.yaml)")
		Eventually(func(g Gomega) {
			var d appsv1.Deployment
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: release + "-egress-proxy"}, &d)).To(Succeed())
			g.Expect(d.Status.ReadyReplicas).To(BeNumerically(">=", 1))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
		nodeIP = nodeAddress()
		port, ca, served = tlsHostListener(nodeIP)
		createTool(ctx, toolgatetest.MakeTool(fetchTool, demoNS).Image(toolImage).Command("/tools/fetch").
			RunnerInImage("").EgressAllow("allowed.test", port).Timeout(60*time.Second).Obj())
	})

	It("reaches allowed.test, is refused other.test and an IP literal on the same listener, and the call records each", func(ctx SpecContext) {
		base := func(host string) string { return "https://" + net.JoinHostPort(host, strconv.Itoa(int(port))) + "/" }
		got, res := fetchThrough(ctx, map[string]any{"ca": ca,
			"urls": []string{base("allowed.test"), base("other.test"), base(nodeIP)}})
		Expect(res).To(HaveLen(3))
		Expect(res[0]).To(And(HaveField("OK", true), HaveField("Body", "egress e2e")), "allowed.test through the proxy")
		Expect(res[1].OK).To(BeFalse())
		Expect(res[1].Error).To(ContainSubstring("Forbidden"), "other.test: refused by the proxy (403)")
		Expect(res[2].OK).To(BeFalse())
		Expect(res[2].Error).To(ContainSubstring("Forbidden"), "the node address as an IP literal: refused by the proxy")
		Expect(served("allowed.test")).To(Equal(1))
		Expect(served("other.test")).To(BeZero())

		By("status.attempts[0].egress records the allowed and the refused destinations")
		Expect(got.Status.Attempts).To(HaveLen(1))
		log := got.Status.Attempts[0].Egress
		Expect(log).NotTo(BeNil())
		Expect(log.Unavailable).To(BeEmpty())
		Expect(log.Destinations).To(ConsistOf(
			toolgatev1alpha1.EgressDestination{Host: "allowed.test", Port: port, Allowed: 1},
			toolgatev1alpha1.EgressDestination{Host: "other.test", Port: port, Refused: 1, Reason: egress.RefusedNotAllowed},
			toolgatev1alpha1.EgressDestination{Host: nodeIP, Port: port, Refused: 1, Reason: egress.RefusedIPLiteral},
		))
	}, SpecTimeout(4*time.Minute))

	It("refuses an attempt's requests past its token bucket (429 RateLimited), and the call counts every request", func(ctx SpecContext) {
		// Plain HTTP: each request is one proxy request and takes a token (a tunnel's requests
		// would not). 300 back to back: the burst (the chart's egressProxy.burst, 100) passes
		// to the allow list (403 NotAllowed); at 20 a second the rest could refill only if
		// the body took over 10 s.
		const n = 300
		got := waitTerminal(ctx, createCall(ctx, fetchTool, "", map[string]any{"url": "http://other.test/", "repeat": n}), 2*time.Minute)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", got.Status.Result)
		var content struct {
			Tally map[string]int `json:"tally"`
		}
		Expect(json.Unmarshal(got.Status.Result.Content.Raw, &content)).To(Succeed())
		AddReportEntry("rate-limited tally", content.Tally)
		Expect(content.Tally).To(HaveKeyWithValue("429", BeNumerically(">=", 1)), "past the burst: Too Many Requests")
		Expect(content.Tally).To(HaveKeyWithValue("403", BeNumerically(">=", egress.DefaultBurst)), "the burst reaches the allow list")
		Expect(content.Tally["403"]+content.Tally["429"]).To(Equal(n), "every request answered by the proxy")

		By("status.attempts[0].egress counts every refused request at other.test:80")
		Expect(got.Status.Attempts).To(HaveLen(1))
		log := got.Status.Attempts[0].Egress
		Expect(log).NotTo(BeNil())
		Expect(log.Destinations).To(ConsistOf(And(HaveField("Host", "other.test"), HaveField("Port", int32(80)),
			HaveField("Allowed", int32(0)), HaveField("Refused", int32(n)))))
	}, SpecTimeout(4*time.Minute))

	It("closes a tunnel to allowed.test whose ClientHello names other.test, and the call records SNIMismatch", func(ctx SpecContext) {
		// Both names are on one listener with one certificate, as on a shared front end: only
		// the proxy's check of the TLS name keeps the tunnel to allowed.test.
		got, res := fetchThrough(ctx, map[string]any{"ca": ca, "serverName": "other.test", "host": "other.test",
			"urls": []string{"https://" + net.JoinHostPort("allowed.test", strconv.Itoa(int(port))) + "/"}})
		Expect(res).To(HaveLen(1))
		Expect(res[0].OK).To(BeFalse(), "the proxy closed the tunnel before the handshake")
		Expect(served("other.test")).To(BeZero())
		Expect(served("allowed.test")).To(BeZero())

		By("status.attempts[0].egress: the tunnel was let through, then refused for its TLS name")
		log := got.Status.Attempts[0].Egress
		Expect(log).NotTo(BeNil())
		Expect(log.Destinations).To(ConsistOf(toolgatev1alpha1.EgressDestination{Host: "allowed.test", Port: port,
			Allowed: 1, Refused: 1, Reason: egress.RefusedSNIMismatch}))
	}, SpecTimeout(4*time.Minute))

	It("refuses a grant replayed after its call ended (407; GrantEnded in the proxy's log)", func(ctx SpecContext) {
		createTool(ctx, toolgatetest.MakeTool("e2e-sleep-egress", demoNS).Image(toolImage).Command("/tools/sleep").
			RunnerInImage("").EgressAllow("allowed.test", port).Timeout(60*time.Second).Obj())
		first := createCall(ctx, "e2e-sleep-egress", "", map[string]any{"seconds": 5})

		By("the first call's grant, read from its Job while it runs")
		var proxyURL string
		Eventually(func(g Gomega) {
			proxyURL = proxyURLOf(ctx, g, first)
			g.Expect(proxyURL).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
		ended := waitTerminal(ctx, first, 2*time.Minute)
		Expect(ended).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", ended.Status.Result)
		Expect(ended.Status.Attempts[0].Egress).NotTo(BeNil())
		Expect(ended.Status.Attempts[0].Egress.Unavailable).To(BeEmpty(), "the operator collected the record, ending the grant")

		By("a second call's body uses the ended grant instead of its own")
		got, res := fetchThrough(ctx, map[string]any{"ca": ca, "proxy": proxyURL,
			"urls": []string{"https://" + net.JoinHostPort("allowed.test", strconv.Itoa(int(port))) + "/"}})
		Expect(res).To(HaveLen(1))
		Expect(res[0].OK).To(BeFalse())
		Expect(res[0].Error).To(ContainSubstring("Proxy Authentication Required"), "the ended grant: 407")
		Expect(served("allowed.test")).To(BeZero())
		Expect(got.Status.Attempts[0].Egress.Destinations).To(BeEmpty(), "nothing went out on the second call's own grant")

		By("the proxy logged the refusal under the first call")
		Eventually(func(g Gomega) {
			g.Expect(egressProxyLog(ctx, g)).To(ContainElement(And(HaveKeyWithValue("reason", egress.RefusedGrantEnded),
				HaveKeyWithValue("call", first.Name), HaveKeyWithValue("host", "allowed.test"))))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("cannot connect directly, around the proxy (NetworkPolicy toolgate-tools-egress-proxy)", func(ctx SpecContext) {
		// The first connection may start before the Pod's address is published (the
		// enforcer's guard drops it, TCP retries after 1 s): 8 s cover the retransmissions.
		got, res := fetchThrough(ctx, map[string]any{"ca": ca, "direct": true, "timeoutSeconds": 8,
			"urls": []string{"https://" + net.JoinHostPort(nodeIP, strconv.Itoa(int(port))) + "/"}})
		Expect(res).To(HaveLen(1))
		Expect(res[0].OK).To(BeFalse(), "a direct connection to this machine from a Pod held to the proxy")
		Expect(served(nodeIP)).To(BeZero())
		Expect(got.Status.Attempts[0].Egress).NotTo(BeNil())
		Expect(got.Status.Attempts[0].Egress.Destinations).To(BeEmpty(), "the proxy saw nothing of a direct connection")
	}, SpecTimeout(4*time.Minute))
})

// proxyURLOf is the proxy URL (with its grant) a call's Job hands to any of its containers,
// as anyone who may read Jobs in the namespace can see it; "" before the Job exists.
func proxyURLOf(ctx context.Context, g Gomega, call *toolgatev1alpha1.ToolCall) string {
	var jobs batchv1.JobList
	g.Expect(admin.List(ctx, &jobs, client.InNamespace(demoNS), client.MatchingLabels{podcontract.LabelCall: call.Name})).To(Succeed())
	for _, j := range jobs.Items {
		spec := j.Spec.Template.Spec
		for _, c := range append(spec.InitContainers, spec.Containers...) {
			for _, e := range c.Env {
				if e.Name == podcontract.EnvHTTPSProxy && e.Value != "" {
					return e.Value
				}
			}
		}
	}
	return ""
}

// egressProxyLog is the egress proxy's log lines (JSON) that refused a destination.
func egressProxyLog(ctx context.Context, g Gomega) []map[string]any {
	cfg, err := clientcmd.BuildConfigFromFlags("", adminCfg)
	g.Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	pods, err := cs.CoreV1().Pods(systemNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=egress-proxy"})
	g.Expect(err).NotTo(HaveOccurred())
	var out []map[string]any
	for _, p := range pods.Items {
		raw, err := cs.CoreV1().Pods(systemNS).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		for _, line := range strings.Split(string(raw), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "refused a destination" {
				out = append(out, rec)
			}
		}
	}
	return out
}
