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
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Containment: what a hostile tool body cannot do to the node or the network.

// kubeletPodPidsLimit is podPidsLimit from the local cluster's kubelet config (0 if unset).
func kubeletPodPidsLimit() int {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(root, ".cluster", "config", "kubelet.yaml"))
	Expect(err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`(?m)^podPidsLimit:\s*(\d+)`).FindSubmatch(data)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(string(m[1]))
	Expect(err).NotTo(HaveOccurred())
	return n
}

// podPidsFile is a file of the Pod's cgroup in the pids hierarchy (cgroupfs driver, v1).
func podPidsFile(uid types.UID, name string) string {
	matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/pids/kubepods*", "*", "pod"+string(uid), name))
	if len(matches) == 0 {
		matches, _ = filepath.Glob(filepath.Join("/sys/fs/cgroup/pids/kubepods*", "pod"+string(uid), name))
	}
	if len(matches) == 0 {
		return ""
	}
	return matches[0]
}

func readInt(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

func nodeReady(ctx context.Context, g Gomega) {
	var nodes corev1.NodeList
	g.Expect(admin.List(ctx, &nodes)).To(Succeed())
	g.Expect(nodes.Items).NotTo(BeEmpty())
	for _, n := range nodes.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status == corev1.ConditionTrue
			}
			if c.Type == corev1.NodePIDPressure {
				g.Expect(c.Status).NotTo(Equal(corev1.ConditionTrue), "node %s under PID pressure", n.Name)
			}
		}
		g.Expect(ready).To(BeTrue(), "node %s Ready", n.Name)
	}
}

var _ = Describe("containment: a fork bomb", Label("containment", "pids"), Serial, func() {
	It("through the sh tool stops at the Pod's pids limit, ends isError, and the node stays healthy", func(ctx SpecContext) {
		limit := kubeletPodPidsLimit()
		// Never run a fork bomb on a node without a per-Pod pids limit: it would exhaust
		// the machine's pid space (kernel.pid_max), not only the test's.
		Expect(limit).To(BeNumerically(">", 0), "the kubelet sets no podPidsLimit (hack/cluster/config.sh)")

		// The bomb forks forever in the background; the shell itself outlives the tool's
		// 20 s timeout, so the call always ends by the deadline whatever the bomb does. The
		// shell's sleep is forked before the bomb and waited for by a builtin: a `sleep`
		// forked after it failed to fork under a loaded CI run (pids already full), the
		// shell ended at once and the Pod was gone before its cgroup was read.
		call := createCall(ctx, "sh", demoScope, map[string]any{"command": "sleep 60 & s=$!; b(){ b|b& }; b; wait $s"})

		By("the Pod's cgroup has the kubelet's pids.max and the bomb fills it")
		var peak int
		Eventually(func(g Gomega) {
			pods := podsOf(ctx, call)
			g.Expect(pods).NotTo(BeEmpty())
			maxFile := podPidsFile(pods[0].UID, "pids.max")
			g.Expect(maxFile).NotTo(BeEmpty(), "pids cgroup of Pod %s", pods[0].UID)
			g.Expect(readInt(maxFile)).To(Equal(limit))
			current, err := readInt(filepath.Join(filepath.Dir(maxFile), "pids.current"))
			g.Expect(err).NotTo(HaveOccurred())
			peak = max(peak, current)
			g.Expect(current).To(BeNumerically(">=", limit*9/10), "pids.current near pids.max")
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
		AddReportEntry("pids.current peak seen", peak)

		By("the call ends isError")
		got := waitTerminal(ctx, call, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
		Expect(got.Status.Result).NotTo(BeNil())
		Expect(got.Status.Result.IsError).To(BeTrue())
		AddReportEntry("fork bomb reason", resultReason(got))

		By("no process of the Pod is left and the node is Ready without PID pressure")
		Eventually(func(g Gomega) {
			for _, p := range podsOf(ctx, call) {
				if f := podPidsFile(p.UID, "pids.current"); f != "" {
					g.Expect(readInt(f)).To(BeZero(), "processes left in Pod %s", p.Name)
				}
			}
			nodeReady(ctx, g)
		}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(poll).Should(Succeed())

		By("a following echo call succeeds")
		echo := createCall(ctx, "echo", demoScope, map[string]any{"message": "after the bomb"})
		Expect(waitTerminal(ctx, echo, callTimeout)).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
	}, SpecTimeout(4*time.Minute))
})

// ---- NetworkPolicy enforcement ------------------------------------------------------------

// probeScript tries each target (host:port) with an HTTP GET and prints "<target> reached"
// when any HTTP response came back (a connection was made), else "<target> blocked".
// (busybox's timeout applet, not wget -T, which crashes Debian's static busybox 1.35.)
func probeScript(timeoutSec int, targets ...string) string {
	return fmt.Sprintf(`for t in %s; do if timeout %d wget -S -O /dev/null "http://$t/" 2>&1 | grep -q HTTP/; then echo "$t reached"; else echo "$t blocked"; fi; done`,
		strings.Join(targets, " "), timeoutSec)
}

// probeResults parses probeScript's output into target → reached.
func probeResults(out string) map[string]bool {
	res := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			res[f[0]] = f[1] == "reached"
		}
	}
	return res
}

// hostListener serves HTTP on the node address (this machine) until the spec ends.
func hostListener(nodeIP string) string {
	GinkgoHelper()
	l, err := net.Listen("tcp", net.JoinHostPort(nodeIP, "0"))
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "host") }),
		ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	DeferCleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// restrictedPod is a bare Pod (not toolgate's: no NetworkPolicy selects it) of the tools
// image running busybox with args, passing Pod Security "restricted".
func restrictedPod(name string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNS, Labels: map[string]string{e2eLabel: "true"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "main", Image: toolImage, ImagePullPolicy: corev1.PullNever,
				Command: append([]string{"/bin/busybox"}, args...),
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
}

func createPod(ctx context.Context, pod *corev1.Pod) *corev1.Pod {
	GinkgoHelper()
	Expect(admin.Create(ctx, pod)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(admin.Delete(ctx, pod, client.GracePeriodSeconds(0)))).To(Succeed())
	})
	return pod
}

// targetPod runs busybox httpd on 8080 and returns its address once it serves.
func targetPod(ctx context.Context) string {
	GinkgoHelper()
	pod := createPod(ctx, restrictedPod("e2e-netpol-target", "httpd", "-f", "-p", "8080", "-h", "/samples"))
	got := &corev1.Pod{}
	Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(got.Status.PodIP).NotTo(BeEmpty())
	}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
	return net.JoinHostPort(got.Status.PodIP, "8080")
}

// probeTool registers a Tool running the sh tool's body with the given network mode.
func probeTool(ctx context.Context, name string, network toolgatev1alpha1.NetworkMode) {
	GinkgoHelper()
	createTool(ctx, toolgatetest.MakeTool(name, demoNS).Image(toolImage).Command("/tools/sh").
		RunnerInImage("").Network(network).Timeout(60*time.Second).Obj())
}

// probeThroughTool runs probeScript through a tool and returns target → reached.
func probeThroughTool(ctx context.Context, tool string, targets ...string) map[string]bool {
	GinkgoHelper()
	call := createCall(ctx, tool, "", map[string]any{"command": probeScript(4, targets...)})
	got := waitTerminal(ctx, call, 2*time.Minute)
	Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", got.Status.Result)
	var content struct {
		Stdout string `json:"stdout"`
	}
	Expect(json.Unmarshal(got.Status.Result.Content.Raw, &content)).To(Succeed())
	res := probeResults(content.Stdout)
	AddReportEntry(tool+" probes", content.Stdout)
	Expect(res).To(HaveLen(len(targets)), content.Stdout)
	return res
}

// Enforcement on the local cluster: hack/cluster runs sigs.k8s.io/kube-network-policies
// (with a guard for traffic to this machine and for Pods whose address is not yet
// published, hack/netpol); the operator ensures toolgate's NetworkPolicies
// (--network-policy=ensure). Every target is on this machine.
var _ = Describe("containment: NetworkPolicy is enforced", Label("containment", "networkpolicy", "enforced"), Ordered, func() {
	var apiService, apiNode, host, pod string

	BeforeEach(func(ctx SpecContext) {
		nodeIP := nodeAddress()
		apiService, apiNode = "10.0.0.1:443", net.JoinHostPort(nodeIP, "6443")
		host = hostListener(nodeIP)
		pod = targetPod(ctx)

		By("control: a Pod no NetworkPolicy selects reaches every target")
		// Its first packets may be dropped until its address is published (the guard):
		// 8 s cover TCP's retransmissions.
		control := createPod(ctx, restrictedPod("e2e-netpol-control", "sh", "-c", probeScript(8, apiService, apiNode, host, pod)))
		Eventually(func(g Gomega) {
			got := &corev1.Pod{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(control), got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(corev1.PodSucceeded))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Succeed())
		out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", adminCfg, "-n", demoNS, "logs", control.Name).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		AddReportEntry("control probes", string(out))
		Expect(probeResults(string(out))).To(Equal(map[string]bool{apiService: true, apiNode: true, host: true, pod: true}))
	})

	It("a network None tool reaches neither the API server, another Pod, nor this machine", func(ctx SpecContext) {
		probeTool(ctx, "e2e-net-none", toolgatev1alpha1.NetworkNone)
		// The first probe starts with the body, before the kubelet published the Pod's address.
		res := probeThroughTool(ctx, "e2e-net-none", apiService, apiNode, pod, host)
		Expect(res).To(Equal(map[string]bool{apiService: false, apiNode: false, pod: false, host: false}))
	}, SpecTimeout(5*time.Minute))

	It("an Egress tool reaches no cluster address: API server, node, Pods, this machine", func(ctx SpecContext) {
		probeTool(ctx, "e2e-net-egress", toolgatev1alpha1.NetworkEgress)
		res := probeThroughTool(ctx, "e2e-net-egress", apiService, apiNode, pod, host)
		Expect(res).To(Equal(map[string]bool{apiService: false, apiNode: false, pod: false, host: false}))
	}, SpecTimeout(5*time.Minute))
})
