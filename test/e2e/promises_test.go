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
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// canonicalJSON marshals v with sorted keys, no insignificant whitespace and no HTML
// escaping: the canonical form toolgate freezes (for the strings and integers used here).
func canonicalJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	Expect(enc.Encode(v)).To(Succeed())
	return bytes.TrimRight(b.Bytes(), "\n")
}

var _ = Describe("echo: the body receives the frozen arguments", Label("echo", "frozen-args"), func() {
	It("returns the arguments as its result, and argumentsDigest is the digest of their canonical JSON", func(ctx SpecContext) {
		args := map[string]any{
			"message": "frozen <bytes> & ünïcødé ✓",
			"tags":    []any{"e2e", "echo"},
			"nested":  map[string]any{"z": 1, "a": []any{true, nil, "x"}},
		}
		call := createCall(ctx, "echo", demoScope, args)
		got := waitTerminal(ctx, call, callTimeout)

		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
		Expect(got.Status.Result).NotTo(BeNil())
		Expect(got.Status.Result.OK).To(BeTrue())
		canonical := canonicalJSON(args)
		Expect(got.Status.ArgumentsDigest).To(Equal(toolgatetest.Digest(canonical)))
		Expect(got.Status.Result.Content).NotTo(BeNil())
		Expect(string(got.Status.Result.Content.Raw)).To(MatchJSON(canonical))

		// The example echo Tool declares sandbox.scratch None: its Pod mounts nothing (the
		// signer and the body side meet at an abstract socket) and nothing in it is writable,
		// yet the arguments arrived (on stdin).
		pods := podsOf(ctx, call)
		Expect(pods).NotTo(BeEmpty())
		for _, p := range pods {
			Expect(p.Spec.Volumes).To(BeEmpty(), "Pod %s volumes", p.Name)
			for _, c := range p.Spec.Containers {
				Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue(), "container %s", c.Name)
			}
		}
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("timeout: a tool that outlives its timeout is stopped", Label("timeout", "deadline"), func() {
	It("ends Failed/DeadlineExceeded within the timeout plus a few seconds, with no container left running", func(ctx SpecContext) {
		// The example sleep Tool has timeout 5s.
		start := time.Now()
		call := createCall(ctx, "sleep", demoScope, map[string]any{"seconds": 300})
		got := waitTerminal(ctx, call, 40*time.Second)
		elapsed := time.Since(start)
		AddReportEntry("sleep 300 under a 5s timeout: create to terminal", elapsed.String())

		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
		Expect(resultReason(got)).To(Equal(toolgatev1alpha1.ReasonDeadlineExceeded))
		Expect(elapsed).To(BeNumerically("<=", 30*time.Second))

		// The Job's activeDeadlineSeconds kills the Pod; the kubelet may still be tearing it
		// down when the result is frozen, so allow it a few seconds.
		Eventually(func(g Gomega) {
			for _, p := range podsOf(ctx, call) {
				for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
					g.Expect(cs.State.Running).To(BeNil(), "container %s of Pod %s still running", cs.Name, p.Name)
				}
				g.Expect(p.Status.Phase).To(Or(Equal(corev1.PodFailed), Equal(corev1.PodSucceeded)),
					"Pod %s phase", p.Name)
			}
		}).WithContext(ctx).WithTimeout(15 * time.Second).WithPolling(poll).Should(Succeed())
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("non-zero exit", Label("exit-code"), func() {
	It("a body that exits 3 ends Failed/NonZeroExit", func(ctx SpecContext) {
		// The example sh tool never exits non-zero itself (it reports the command's exit
		// code in an isError result, see the next spec), so this Tool runs busybox directly.
		createTool(ctx, toolgatetest.MakeTool("e2e-exit3", demoNS).Image(toolImage).
			Command("/bin/busybox", "sh", "-c", "echo about to fail >&2; exit 3").
			RunnerInImage("").Timeout(20*time.Second).Obj())
		call := createCall(ctx, "e2e-exit3", "", map[string]any{})
		got := waitTerminal(ctx, call, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
		Expect(resultReason(got)).To(Equal(toolgatev1alpha1.ReasonNonZeroExit))
	}, SpecTimeout(2*time.Minute))

	It("the sh tool running `exit 3` ends Failed with the tool's isError result (ToolError, exitCode 3)", func(ctx SpecContext) {
		// What the sh tool actually promises: it exits 0 and returns {"isError":true,
		// "exitCode":3,...}; toolgate turns an isError result into Failed/ToolError.
		call := createCall(ctx, "sh", demoScope, map[string]any{"command": "exit 3"})
		got := waitTerminal(ctx, call, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
		Expect(got.Status.Result).NotTo(BeNil())
		Expect(got.Status.Result.IsError).To(BeTrue())
		Expect(got.Status.Result.Reason).To(Equal("ToolError"))
		Expect(got.Status.Result.Content).NotTo(BeNil())
		var content struct {
			ExitCode int `json:"exitCode"`
		}
		Expect(json.Unmarshal(got.Status.Result.Content.Raw, &content)).To(Succeed())
		Expect(content.ExitCode).To(Equal(3))
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("out of memory", Label("oom"), func() {
	It("a tool over its memory limit ends Failed", func(ctx SpecContext) {
		call := createCall(ctx, "oom", demoScope, map[string]any{"mib": 256})
		got := waitTerminal(ctx, call, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
		// OOMKilled is what toolgate reports when the runtime says so; on this cgroup v1 /
		// containerd 1.6 cluster the kernel's OOM kill is sometimes reported as a plain
		// non-zero exit (137) without the OOMKilled reason, so both are accepted.
		Expect(resultReason(got)).To(BeElementOf(toolgatev1alpha1.ReasonOOMKilled, toolgatev1alpha1.ReasonNonZeroExit))
		AddReportEntry("oom reason", resultReason(got))
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("an image that never starts", Label("image"), func() {
	It("ends Failed/ImageNeverStarted", func(ctx SpecContext) {
		createTool(ctx, toolgatetest.MakeTool("e2e-no-image", demoNS).
			Image("toolgate.local/does-not-exist:e2e").Command("/nothing").
			Timeout(10*time.Second).Obj())
		call := createCall(ctx, "e2e-no-image", "", map[string]any{})
		got := waitTerminal(ctx, call, 2*time.Minute)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
		Expect(resultReason(got)).To(Equal(toolgatev1alpha1.ReasonImageNeverStarted))
	}, SpecTimeout(3*time.Minute))
})

// largeText is what cmd/tools/large returns for kib KiB.
func largeText(kib int) string {
	var b strings.Builder
	for i := 1; i <= kib*16; i++ {
		sum := sha256.Sum256([]byte(fmt.Sprint(i)))
		fmt.Fprintf(&b, "%06d %s\n", i, hex.EncodeToString(sum[:])[:56])
	}
	return b.String()
}

var _ = Describe("large results travel through the Pod log", Label("large", "log-path"), func() {
	It("a 24 KiB result arrives intact", func(ctx SpecContext) {
		const kib = 24
		call := createCall(ctx, "large", demoScope, map[string]any{"kib": kib})
		got := waitTerminal(ctx, call, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
		Expect(got.Status.Result).NotTo(BeNil())
		Expect(got.Status.Result.Content).NotTo(BeNil())
		var text string
		Expect(json.Unmarshal(got.Status.Result.Content.Raw, &text)).To(Succeed(), "content is a JSON string")
		want := largeText(kib)
		Expect(len(text)).To(Equal(kib << 10))
		Expect(text == want).To(BeTrue(), "content differs from the tool's output (len %d)", len(text))
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("the sandbox seen from inside", Label("sandbox", "whoami"), func() {
	It("runs as 65532 with a read-only root fs and no service-account token", func(ctx SpecContext) {
		call := createCall(ctx, "whoami", demoScope, map[string]any{})
		got := waitTerminal(ctx, call, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
		expectSandboxedWhoami(got)
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("tool Pod NetworkPolicies", Label("networkpolicy"), func() {
	It("the chart's NetworkPolicies exist in toolgate-demo", func(ctx SpecContext) {
		// Existence here; enforcement: containment_test.go.
		var deny, egress networkingv1.NetworkPolicy
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: "toolgate-tools-deny-all"}, &deny)).To(Succeed())
		Expect(deny.Spec.PodSelector.MatchLabels).To(HaveKeyWithValue(podcontract.LabelNetwork, podcontract.NetworkNone))
		Expect(deny.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
		Expect(deny.Spec.Ingress).To(BeEmpty())
		Expect(deny.Spec.Egress).To(BeEmpty())
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: "toolgate-tools-egress-only"}, &egress)).To(Succeed())
		Expect(egress.Spec.PodSelector.MatchLabels).To(HaveKeyWithValue(podcontract.LabelNetwork, podcontract.NetworkEgress))
		Expect(egress.Spec.Ingress).To(BeEmpty())
		Expect(egress.Spec.Egress).NotTo(BeEmpty())
	})
})

var _ = Describe("approval needs the approver role", Label("approval", "rbac"), func() {
	It("the agent cannot approve or write status; the approver approves an Ask call and it completes", func(ctx SpecContext) {
		call := createCall(ctx, "sh", demoScope,
			// Names wget, so it needs approval; exits 0 whether or not the (enforced) policy blocks it.
			map[string]any{"command": "timeout 3 wget -S -O /dev/null http://10.0.0.1:443/ 2>&1 | grep -m1 HTTP/ || echo blocked"})
		parked := &toolgatev1alpha1.ToolCall{}
		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(call), parked)).To(Succeed())
			g.Expect(parked).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseAwaitingApproval))
			g.Expect(parked.Status.ArgumentsDigest).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())

		By("the agent may not create a ToolCallApproval")
		selfApproval := toolgatetest.MakeToolCallApproval(call.Name, demoNS).For(parked).Approver("agent").Obj()
		err := agent.Create(ctx, selfApproval)
		Expect(isForbidden(err)).To(BeTrue(), "agent creating an approval: %v", err)

		By("the agent may not update toolcalls/status")
		mine := &toolgatev1alpha1.ToolCall{}
		Expect(agent.Get(ctx, client.ObjectKeyFromObject(call), mine)).To(Succeed())
		mine.Status.Phase = toolgatev1alpha1.PhaseRunning
		err = agent.Status().Update(ctx, mine)
		Expect(isForbidden(err)).To(BeTrue(), "agent updating status: %v", err)

		By("the approver approves with the call's arguments digest")
		approval := toolgatetest.MakeToolCallApproval(call.Name, demoNS).For(parked).Approver("approver").
			Reason("e2e: approved by the approver user").Obj()
		Expect(approver.Create(ctx, approval)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(admin.Delete(ctx, approval))).To(Succeed())
		})

		got := waitTerminal(ctx, call, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
		Expect(got.Status.Verdict).To(Equal(toolgatev1alpha1.Verdict("Allow")))
	}, SpecTimeout(3*time.Minute))
})

var _ = Describe("operator restart mid-call", Label("restart", "disruptive"), Serial, func() {
	It("a call whose leader operator Pod is deleted while its Job runs completes once, with one Job", func(ctx SpecContext) {
		DeferCleanup(func(ctx SpecContext) { waitOperatorAvailable(ctx) })
		createTool(ctx, toolgatetest.MakeTool("e2e-sleep-long", demoNS).Image(toolImage).
			Command("/tools/sleep").RunnerInImage("").Timeout(2*time.Minute).
			Parameters(map[string]any{
				"type":       "object",
				"properties": map[string]any{"seconds": map[string]any{"type": "number"}},
				"required":   []any{"seconds"},
			}).Obj())
		call := createCall(ctx, "e2e-sleep-long", "", map[string]any{"seconds": 3})

		By("waiting for the call's Job")
		Eventually(func() int { return len(jobsOf(ctx, call)) }).
			WithContext(ctx).WithTimeout(callTimeout).WithPolling(100 * time.Millisecond).Should(Equal(1))

		By("deleting the leader's Pod (the standby takes over)")
		leader, err := deleteLeaderPod(ctx, false)
		Expect(err).NotTo(HaveOccurred())
		deletedAt := time.Now().Truncate(time.Second)
		Eventually(func(g Gomega) {
			pod, err := leaderPod(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pod.Name).NotTo(Equal(leader))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed(), "a new leader")

		got := waitTerminal(ctx, call, 3*time.Minute)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
		Expect(got.Status.Attempts).To(HaveLen(1))
		Expect(got.Status.Attempts[0].Attempt).To(Equal(int32(1)))
		// The result was frozen after the leader's Pod was deleted (the body sleeps 3 s), so
		// it is the new leader, not the deleted one, that saw the call through.
		Expect(got.Status.CompletionTime).NotTo(BeNil())
		Expect(got.Status.CompletionTime.Time).NotTo(BeTemporally("<", deletedAt))

		jobs := jobsOf(ctx, call)
		Expect(jobs).To(HaveLen(1))
		Expect(jobs[0].Labels).To(HaveKeyWithValue(podcontract.LabelAttempt, "1"))

		By("the result is frozen once (one ResultFrozen event) and nothing more happens")
		frozen := func() int {
			var evs eventsv1.EventList
			Expect(admin.List(ctx, &evs, client.InNamespace(demoNS))).To(Succeed())
			n := 0
			for _, e := range evs.Items {
				if e.Regarding.Name == call.Name && e.Reason == "ResultFrozen" {
					n++
				}
			}
			return n
		}
		Eventually(frozen).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(poll).Should(Equal(1))
		Consistently(func(g Gomega) {
			g.Expect(frozen()).To(Equal(1))
			g.Expect(jobsOf(ctx, call)).To(HaveLen(1))
			var now toolgatev1alpha1.ToolCall
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(call), &now)).To(Succeed())
			g.Expect(now.Status.Attempts).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(5*time.Minute))
})

// expectSandboxedWhoami checks what the whoami tool saw from inside its Pod: uid/euid/gid
// 65532, a read-only root with a writable /tmp, no service-account token, no effective
// capabilities, no_new_privs. Cold and warm Pods must read the same.
func expectSandboxedWhoami(got *toolgatev1alpha1.ToolCall) {
	GinkgoHelper()
	Expect(got.Status.Result.Content).NotTo(BeNil())
	var r struct {
		UID                        int    `json:"uid"`
		GID                        int    `json:"gid"`
		EUID                       int    `json:"euid"`
		RootFilesystemWritable     bool   `json:"rootFilesystemWritable"`
		TmpWritable                bool   `json:"tmpWritable"`
		ServiceAccountTokenMounted bool   `json:"serviceAccountTokenMounted"`
		CapEff                     string `json:"capEff"`
		NoNewPrivs                 bool   `json:"noNewPrivs"`
	}
	Expect(json.Unmarshal(got.Status.Result.Content.Raw, &r)).To(Succeed(), string(got.Status.Result.Content.Raw))
	Expect(r.UID).To(Equal(65532))
	Expect(r.EUID).To(Equal(65532))
	Expect(r.GID).To(Equal(65532))
	Expect(r.RootFilesystemWritable).To(BeFalse())
	Expect(r.TmpWritable).To(BeTrue())
	Expect(r.ServiceAccountTokenMounted).To(BeFalse())
	Expect(r.NoNewPrivs).To(BeTrue())
	Expect(strings.Trim(r.CapEff, "0")).To(BeEmpty(), "effective capabilities %s", r.CapEff)
}
