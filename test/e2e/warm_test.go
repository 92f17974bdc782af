package e2e

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Warm pools on real Pods (issue 14): the same promises as the cold path, for calls that
// run in a claimed pool Pod. Each spec makes a namespace-layer copy of an example Tool with
// a warm pool, waits for the pool, and checks the call went warm.

const poolLabel = podcontract.LabelPool

// warmTool copies the example Tool example as name with a pool of size, edits it, creates
// it and waits until size pool Pods are Ready.
func warmTool(ctx context.Context, example, name string, size int32, edit func(*toolgatev1alpha1.ToolSpec)) {
	GinkgoHelper()
	var src toolgatev1alpha1.Tool
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: example}, &src)).To(Succeed())
	t := &toolgatev1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNS}}
	t.Spec.ToolSpec = *src.Spec.ToolSpec.DeepCopy()
	t.Spec.Name = ""
	t.Spec.WarmPool = &toolgatev1alpha1.WarmPool{Size: size}
	if edit != nil {
		edit(&t.Spec.ToolSpec)
	}
	createTool(ctx, t)
	waitPool(ctx, name, int(size))
}

// warmPod: a pool Pod for one call, not a session pool Pod (kept besides them while a
// ToolScope of the namespace declares sessionSandbox; it carries the session CA).
func warmPod(p *corev1.Pod) bool { return p.Annotations[podcontract.AnnotationSessionCA] == "" }

// waitPool waits until the Tool's pool holds n Ready, unclaimed warm Pods.
func waitPool(ctx context.Context, tool string, n int) {
	GinkgoHelper()
	readyPoolPods(ctx, tool, n, warmPod, time.Minute)
}

// readyPoolPods waits until the Tool's pool holds n Ready, unclaimed Pods that kind picks
// (warmPod, or a session pool Pod) and returns them.
func readyPoolPods(ctx context.Context, tool string, n int, kind func(*corev1.Pod) bool, timeout time.Duration) []corev1.Pod {
	GinkgoHelper()
	var ready []corev1.Pod
	Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(admin.List(ctx, &pods, client.InNamespace(demoNS), client.MatchingLabels{poolLabel: tool})).To(Succeed())
		ready = ready[:0]
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(&p) && kind(&p) {
				ready = append(ready, p)
			}
		}
		g.Expect(ready).To(HaveLen(n))
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return ready
}

// warmCall makes one call and waits for it; it must have run warm.
func warmCall(ctx context.Context, tool string, args any, timeout time.Duration) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	call := createCall(ctx, tool, "", args)
	got := waitTerminal(ctx, call, timeout)
	Expect(got.Status.Attempts).To(HaveLen(1))
	Expect(got.Status.Attempts[0].Path).To(Equal(toolgatev1alpha1.PathWarm), "the call ran cold: %+v", got.Status.Attempts[0])
	Expect(jobsOf(ctx, call)).To(BeEmpty(), "a warm call creates no Job")
	return got
}

var _ = Describe("warm pool: the body receives the frozen arguments", Label("warm"), func() {
	It("runs three calls in three different Pods, each deleted after its result, the pool refilled", func(ctx SpecContext) {
		warmTool(ctx, "echo", "e2e-warm-echo", 2, nil)
		used := map[string]bool{}
		for i, msg := range []string{"frozen <bytes> & ünïcødé ✓", "second $(HOME) $$", "third"} {
			args := map[string]any{"message": msg, "n": i}
			got := warmCall(ctx, "e2e-warm-echo", args, callTimeout)
			Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
			canonical := canonicalJSON(args)
			Expect(got.Status.ArgumentsDigest).To(Equal(toolgatetest.Digest(canonical)))
			Expect(string(got.Status.Result.Content.Raw)).To(MatchJSON(canonical))
			pod := got.Status.Attempts[0].PodName
			Expect(used).NotTo(HaveKey(pod), "Pod %s served two calls", pod)
			used[pod] = true
			AddReportEntry("warm echo create → terminal", got.Status.CompletionTime.Sub(got.CreationTimestamp.Time).String())
			Eventually(func(g Gomega) {
				var p corev1.Pod
				err := admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: pod}, &p)
				g.Expect(apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil).To(BeTrue(), "Pod %s kept", pod)
			}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
			waitPool(ctx, "e2e-warm-echo", 2)
		}
	}, SpecTimeout(4*time.Minute))
})

var _ = Describe("warm pool: the deadline", Label("warm", "deadline"), func() {
	It("a warm sleep with a 2 s timeout is killed by the Pod's activeDeadlineSeconds", func(ctx SpecContext) {
		warmTool(ctx, "sleep", "e2e-warm-sleep", 1, func(s *toolgatev1alpha1.ToolSpec) {
			s.Timeout = &metav1.Duration{Duration: 2 * time.Second}
		})
		start := time.Now()
		got := warmCall(ctx, "e2e-warm-sleep", map[string]any{"seconds": 300}, 40*time.Second)
		elapsed := time.Since(start)
		AddReportEntry("warm sleep 300 under a 2s timeout: create to terminal", elapsed.String())
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
		Expect(resultReason(got)).To(Equal(toolgatev1alpha1.ReasonDeadlineExceeded))
		Expect(elapsed).To(BeNumerically("<=", 20*time.Second))
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("warm pool: failures end isError", Label("warm", "exit-code", "oom"), func() {
	It("a non-zero exit ends NonZeroExit, an OOM kill OOMKilled (or 137 on this node)", func(ctx SpecContext) {
		warmTool(ctx, "sleep", "e2e-warm-exit3", 1, func(s *toolgatev1alpha1.ToolSpec) {
			s.Parameters = nil
			s.Body.Command = []string{"/bin/busybox", "sh", "-c", "echo about to fail >&2; exit 3"}
		})
		got := warmCall(ctx, "e2e-warm-exit3", map[string]any{}, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
		Expect(resultReason(got)).To(Equal(toolgatev1alpha1.ReasonNonZeroExit))

		warmTool(ctx, "oom", "e2e-warm-oom", 1, nil)
		got = warmCall(ctx, "e2e-warm-oom", map[string]any{"mib": 256}, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
		Expect(resultReason(got)).To(BeElementOf(toolgatev1alpha1.ReasonOOMKilled, toolgatev1alpha1.ReasonNonZeroExit))
		AddReportEntry("warm oom reason", resultReason(got))
	}, SpecTimeout(3*time.Minute))
})

var _ = Describe("warm pool: the sandbox seen from inside", Label("warm", "sandbox", "whoami"), func() {
	It("reads as a cold Pod does: uid 65532, read-only root, no token, no capabilities", func(ctx SpecContext) {
		warmTool(ctx, "whoami", "e2e-warm-whoami", 1, nil)
		got := warmCall(ctx, "e2e-warm-whoami", map[string]any{}, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
		expectSandboxedWhoami(got)
	}, SpecTimeout(2*time.Minute))
})

var _ = Describe("warm pool: operator restart mid-call", Label("warm", "restart", "disruptive"), Serial, func() {
	It("a warm call whose leader is deleted while the body runs ends with the right result", func(ctx SpecContext) {
		DeferCleanup(func(ctx SpecContext) { waitOperatorAvailable(ctx) })
		warmTool(ctx, "sleep", "e2e-warm-sleep-long", 1, func(s *toolgatev1alpha1.ToolSpec) {
			s.Timeout = &metav1.Duration{Duration: time.Minute}
		})
		call := createCall(ctx, "e2e-warm-sleep-long", "", map[string]any{"seconds": 6})
		By("waiting for the claim")
		Eventually(func(g Gomega) {
			var c toolgatev1alpha1.ToolCall
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(call), &c)).To(Succeed())
			g.Expect(c.Status.Attempts).NotTo(BeEmpty())
			g.Expect(c.Status.Attempts[0].Path).To(Equal(toolgatev1alpha1.PathWarm))
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		By("deleting the leader's Pod (the standby takes over)")
		leader, err := deleteLeaderPod(ctx, false)
		Expect(err).NotTo(HaveOccurred())
		deletedAt := time.Now().Truncate(time.Second)
		got := waitTerminal(ctx, call, 3*time.Minute)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "leader %s deleted", leader)
		Expect(got.Status.Attempts).To(HaveLen(1))
		Expect(got.Status.Attempts[0].Path).To(Equal(toolgatev1alpha1.PathWarm))
		Expect(got.Status.CompletionTime.Time).NotTo(BeTemporally("<", deletedAt))
		var out struct {
			Slept float64 `json:"slept"`
		}
		Expect(json.Unmarshal(got.Status.Result.Content.Raw, &out)).To(Succeed())
		Expect(out.Slept).To(BeNumerically(">=", 6))
	}, SpecTimeout(4*time.Minute))
})

var _ = Describe("warm pool: a ClusterTool's pool in the call's namespace", Label("warm", "clustertool"), func() {
	It("keeps its Pods in the listed namespace, and a call there runs warm with the frozen bytes", func(ctx SpecContext) {
		const name = "e2e-warm-cluster-echo"
		var src toolgatev1alpha1.Tool
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: "echo"}, &src)).To(Succeed())
		ct := &toolgatev1alpha1.ClusterTool{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{e2eLabel: "true"}}}
		ct.Spec = *src.Spec.ToolSpec.DeepCopy()
		ct.Spec.Name = ""
		ct.Spec.WarmPool = &toolgatev1alpha1.WarmPool{Size: 1, Namespaces: []string{demoNS}}
		Expect(admin.Create(ctx, ct)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, ct))).To(Succeed()) })
		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(ct), ct)).To(Succeed())
			g.Expect(ct).To(toolgatetest.HaveCondition(toolgatev1alpha1.ConditionRegistered, metav1.ConditionTrue, ""))
			g.Expect(ct).To(toolgatetest.HaveCondition(toolgatev1alpha1.ConditionWarmPool, metav1.ConditionTrue, toolgatev1alpha1.ReasonPoolKept))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
		waitPool(ctx, name, 1)
		var pods corev1.PodList
		Expect(admin.List(ctx, &pods, client.InNamespace(demoNS), client.MatchingLabels{poolLabel: name})).To(Succeed())
		for _, p := range pods.Items {
			Expect(metav1.IsControlledBy(&p, ct)).To(BeTrue(), "Pod %s is not the ClusterTool's", p.Name)
		}

		args := map[string]any{"message": "cluster <bytes> & ünïcødé ✓"}
		got := warmCall(ctx, name, args, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
		Expect(got.Status.Tool.Kind).To(Equal(toolgatev1alpha1.ToolKindClusterTool))
		canonical := canonicalJSON(args)
		Expect(got.Status.ArgumentsDigest).To(Equal(toolgatetest.Digest(canonical)))
		Expect(string(got.Status.Result.Content.Raw)).To(MatchJSON(canonical))
		AddReportEntry("warm ClusterTool echo create → terminal", got.Status.CompletionTime.Sub(got.CreationTimestamp.Time).String())
		waitPool(ctx, name, 1)
	}, SpecTimeout(3*time.Minute))
})
