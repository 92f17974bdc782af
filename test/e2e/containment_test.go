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
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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
		// 20 s timeout, so the call always ends by the deadline whatever the bomb does.
		call := createCall(ctx, "sh", demoScope, map[string]any{"command": "b(){ b|b& }; b; sleep 60"})

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

