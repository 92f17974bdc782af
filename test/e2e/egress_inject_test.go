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
	"encoding/json"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/egress"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Credentials injected at the egress proxy (issue 31 item 2) and grants bound to their Pod
// (item 5). upstreamTLSListener (egress_upstream_test.go) serves HTTPS for allowed.test and
// other.test on the node address with a certificate the proxy trusts, and records each
// request's headers per host.

const (
	injectTool   = "e2e-fetch-injected"
	injectSecret = "e2e-egress-token"
	// e2eInjectedToken is the Secret's value: long and unlike anything else in a result.
	e2eInjectedToken = "ghp_e2eInjectedAtTheProxy0123456789"
)

var _ = Describe("egress: a credential injected at the proxy, which the body never holds", Label("egress", "inject"), Ordered, func() {
	var (
		port    int32
		served  func(string) int
		headers func(string) []http.Header
	)
	url := func(host string) string { return "https://" + net.JoinHostPort(host, strconv.Itoa(int(port))) + "/" }

	BeforeEach(func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			var d appsv1.Deployment
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: release + "-egress-proxy"}, &d)).To(Succeed())
			g.Expect(d.Status.ReadyReplicas).To(BeNumerically(">=", 1))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
		port, served, headers = upstreamTLSListener(nodeAddress())
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: injectSecret, Namespace: demoNS, Labels: map[string]string{e2eLabel: "true"}},
			StringData: map[string]string{"token": e2eInjectedToken + "\n"}}
		Expect(admin.Create(ctx, secret)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, secret))).To(Succeed()) })
		createTool(ctx, toolgatetest.MakeTool(injectTool, demoNS).Image(toolImage).Command("/tools/fetch").RunnerInImage("").
			EgressCredential("allowed.test", port, injectSecret, "token", "", "Bearer").EgressAllow("other.test", port).
			Timeout(60*time.Second).Obj())
	})

	It("reaches allowed.test over HTTPS with the token added by the proxy, other.test without it, and the body never sees it", func(ctx SpecContext) {
		// The body trusts the toolgate egress CA (allowed.test, terminated by the proxy) only
		// through the bundle the runner wrote (SSL_CERT_FILE: the fetch tool's pool is the
		// system pool, which reads it, plus "ca"); other.test is a plain tunnel to the
		// listener, whose CA the tools image (no system roots) is given as "ca".
		caFile, _ := upstreamCAFiles()
		upstreamCA, err := os.ReadFile(caFile)
		Expect(err).NotTo(HaveOccurred())
		got := waitTerminal(ctx, createCall(ctx, injectTool, "", map[string]any{"env": true, "ca": string(upstreamCA),
			"urls": []string{url("allowed.test"), url("other.test")}}), 2*time.Minute)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", got.Status.Result)
		var content struct {
			Results []fetchResult `json:"results"`
			Env     []string      `json:"env"`
		}
		Expect(json.Unmarshal(got.Status.Result.Content.Raw, &content)).To(Succeed())
		AddReportEntry(injectTool+" results", content.Results)
		Expect(content.Results).To(HaveLen(2))
		Expect(content.Results[0].OK).To(BeTrue(), "allowed.test through the proxy's TLS: %+v", content.Results[0])
		Expect(content.Results[1].OK).To(BeTrue(), "other.test through a plain tunnel: %+v", content.Results[1])

		By("the upstream saw the token from allowed.test only")
		Expect(served("allowed.test")).To(Equal(1))
		Expect(headers("allowed.test")).To(ConsistOf(HaveKeyWithValue("Authorization", []string{"Bearer " + e2eInjectedToken})))
		Expect(served("other.test")).To(Equal(1))
		Expect(headers("other.test")).To(HaveEach(Not(HaveKey("Authorization"))))

		By("the body held no token: its environment names the bundle, not the CA, and nothing was redacted")
		Expect(content.Env).To(ContainElement(HavePrefix("SSL_CERT_FILE=" + podcontract.EgressCABundle)))
		Expect(content.Env).NotTo(ContainElement(HavePrefix(podcontract.EnvEgressCA + "=")))
		raw, err := json.Marshal(got)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(ContainSubstring(e2eInjectedToken), "the call's record and result")
		Expect(string(raw)).NotTo(ContainSubstring("[REDACTED]"), "no value for the runner to redact: the body never had it")
		Expect(got.Status.Result.Meta).NotTo(HaveKey("redactions"))
	}, SpecTimeout(4*time.Minute))

	It("refuses the running call's grant from another Pod labelled like a tool Pod", func(ctx SpecContext) {
		createTool(ctx, toolgatetest.MakeTool("e2e-sleep-injected", demoNS).Image(toolImage).Command("/tools/sleep").RunnerInImage("").
			EgressCredential("allowed.test", port, injectSecret, "token", "", "Bearer").Timeout(90*time.Second).Obj())
		first := createCall(ctx, "e2e-sleep-injected", "", map[string]any{"seconds": 30})

		By("the first call's grant, read from its Job, once its Pod runs with an address (the operator binds it)")
		var proxyURL string
		Eventually(func(g Gomega) {
			proxyURL = proxyURLOf(ctx, g, first)
			g.Expect(proxyURL).NotTo(BeEmpty())
			pods := podsOf(ctx, first)
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].Status.PodIP).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())

		By("a Pod an edit user could make, labelled as a tool Pod held to the proxy, replays the grant")
		args, err := json.Marshal(map[string]any{"proxy": proxyURL, "timeoutSeconds": 15, "urls": []string{url("allowed.test")}})
		Expect(err).NotTo(HaveOccurred())
		attacker := replayPod(string(args))
		Expect(admin.Create(ctx, attacker)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, attacker))).To(Succeed()) })
		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(attacker), attacker)).To(Succeed())
			g.Expect(attacker.Status.Phase).To(Or(Equal(corev1.PodSucceeded), Equal(corev1.PodFailed)))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Succeed())
		out := podLog(ctx, attacker)
		AddReportEntry("replaying Pod's output", out)
		Expect(out).To(ContainSubstring(`"ok":false`), "the proxy refused the grant from another address")
		Expect(served("allowed.test")).To(BeZero(), "nothing reached the upstream, with or without the token")

		Expect(out).To(ContainSubstring("Proxy Authentication Required"), "407")

		By("this machine, the node, replays it too")
		_, err = replayFromNode(proxyURL, url("allowed.test"))
		Expect(err).To(MatchError(ContainSubstring("Proxy Authentication Required")), "407 for the node's address")
		Expect(served("allowed.test")).To(BeZero())

		By("the proxy logged the refusals under the first call, WrongPod")
		Eventually(func(g Gomega) {
			var wrong int
			for _, rec := range egressProxyLog(ctx, g) {
				if rec["call"] == first.Name && rec["host"] == "allowed.test" && rec["reason"] == egress.RefusedWrongPod {
					wrong++
				}
			}
			g.Expect(wrong).To(BeNumerically(">=", 1), "the proxy's log is sampled: the record below counts each")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		By("and the first call's own record counts them: the traffic is in a call's record")
		ended := waitTerminal(ctx, first, 2*time.Minute)
		Expect(ended).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", ended.Status.Result)
		Expect(ended.Status.Attempts[0].Egress).NotTo(BeNil())
		Expect(ended.Status.Attempts[0].Egress.Destinations).To(ContainElement(And(HaveField("Host", "allowed.test"),
			HaveField("Refused", BeNumerically(">=", 2)), HaveField("Reason", egress.RefusedWrongPod))))
	}, SpecTimeout(5*time.Minute))
})

// replayPod is a Pod labelled as a tool Pod held to the proxy (so the NetworkPolicy lets it reach
// the proxy) that runs the fetch tool on args, not made by toolgate: what a user who may
// create Pods in the namespace can do with a grant read from a Job.
func replayPod(args string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-replay-", Namespace: demoNS, Labels: map[string]string{
			e2eLabel: "true", podcontract.LabelManagedBy: podcontract.ManagedByValue, podcontract.LabelNetwork: podcontract.NetworkProxy}},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "replay", Image: toolImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/busybox", "sh", "-c", `printf %s "$ARGS" | /tools/fetch`},
				Env:     []corev1.EnvVar{{Name: "ARGS", Value: args}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
}

// podLog is a Pod's log.
func podLog(ctx context.Context, pod *corev1.Pod) string {
	GinkgoHelper()
	cfg, err := clientcmd.BuildConfigFromFlags("", adminCfg)
	Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	raw, err := cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(string(raw))
}

// replayFromNode GETs target through proxyURL (a grant) from this machine, the node.
func replayFromNode(proxyURL, target string) (*http.Response, error) {
	u, err := neturl.Parse(proxyURL)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
	resp, err := c.Get(target)
	if err == nil {
		_ = resp.Body.Close()
	}
	return resp, err
}
