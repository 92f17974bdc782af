package e2e

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// scribbleScript is a body that traps SIGTERM and goes on appending numbered lines to
// /workspace/notes.txt until the kubelet kills it at the end of its grace period.
const scribbleScript = `trap '' TERM
i=0
while :; do i=$((i+1)); echo "line $i" >> /workspace/notes.txt; sleep 0.1; done`

// scribbleTool is a ReadWrite workspace tool of the scope running scribbleScript with
// busybox sh straight under the runner (which forwards SIGTERM to it).
func scribbleTool(scope string) *toolgatev1alpha1.Tool {
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	return toolgatetest.MakeTool(scope+"-scribble", demoNS).Name("scribble").Scope(scope).Image(toolImage).
		Command("/bin/busybox", "sh", "-c", scribbleScript).RunnerInImage("").Timeout(5 * time.Minute).
		Workspace(toolgatev1alpha1.WorkspaceReadWrite).
		Resources(corev1.ResourceRequirements{Requests: small, Limits: small}).
		Parameters(map[string]any{"type": "object"}).Obj()
}

// startSessionCall creates a call of the session as the agent, without waiting for it.
func startSessionCall(ctx context.Context, scope, session, tool string, args any) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	call := toolgatetest.MakeToolCall("", demoNS).Tool(tool).Scope(scope).Session(session).Requester("agent").
		Args(args).Label(e2eLabel, "true").Obj()
	call.GenerateName = "e2e-barrier-" + tool + "-"
	Expect(agent.Create(ctx, call)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })
	return call
}

// A cancelled ReadWrite call whose body ignores SIGTERM goes on writing to the workspace
// for its grace period: the next ReadWrite call of its session starts only once the body's
// Pod is gone, finds a file nobody writes to any more, and the cancelled call's record says
// its execution was stopped only then.
var _ = Describe("a stopped call's barrier", Label("barrier", "workspace", "cancel"), func() {
	It("holds the next ReadWrite call of the session until the cancelled body's Pod is gone", func(ctx SpecContext) {
		scope := workspaceScope(ctx)
		createTool(ctx, scribbleTool(scope))
		session := "e2e-" + rand.String(8)
		first := startSessionCall(ctx, scope, session, "scribble", map[string]any{})
		Eventually(func(g Gomega) {
			got := &toolgatev1alpha1.ToolCall{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(first), got)).To(Succeed())
			g.Expect(runningPod(ctx, g, got)).To(BeTrue(), "the body writes in a real Pod")
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
		firstPod := podsOf(ctx, first)[0]
		second := startSessionCall(ctx, scope, session, "sh", map[string]any{
			"command": `a=$(wc -l < notes.txt); sleep 2; b=$(wc -l < notes.txt); echo "$a $b"; tail -n 1 notes.txt`})
		Eventually(func(g Gomega) {
			got := &toolgatev1alpha1.ToolCall{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(second), got)).To(Succeed())
			g.Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseQueued))
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())

		By("cancelling the first call: its body gets SIGTERM, ignores it, and writes on")
		cancelled := &toolgatev1alpha1.ToolCall{}
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(first), cancelled)).To(Succeed())
		patch := client.MergeFrom(cancelled.DeepCopy())
		cancelled.Spec.Cancel = true
		Expect(agent.Patch(ctx, cancelled, patch)).To(Succeed(), "the requester cancels its own call")
		sawStopping := false
		Eventually(func(g Gomega) {
			pod := &corev1.Pod{}
			err := admin.Get(ctx, client.ObjectKeyFromObject(&firstPod), pod)
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			if err != nil || !bodyRuns(pod) {
				return // the first call's body is gone
			}
			if len(podsOf(ctx, second)) > 0 {
				StopTrying("the second ReadWrite call got a Pod while the first one's body still ran").Now()
			}
			got := &toolgatev1alpha1.ToolCall{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(first), got)).To(Succeed())
			if isTerminal(got.Status.Phase) {
				StopTrying("the first call ended while its body still ran: " + toolgatetest.Explain(got)).Now()
			}
			sawStopping = sawStopping || hasStopping(got)
			g.Expect(bodyRuns(pod)).To(BeFalse(), "the first call's body runs on after SIGTERM")
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
		Expect(sawStopping).To(BeTrue(), "while its Pod ran, the first call said it waited for it (Executed=Unknown, Stopping)")

		By("the first call's record says its execution was stopped")
		done := waitTerminal(ctx, first, callTimeout)
		Expect(resultReason(done)).To(Equal(toolgatev1alpha1.ReasonCancelled), toolgatetest.Explain(done))
		Expect(done.Status.Result.Error).To(Equal("the call was cancelled while it ran; its execution was stopped"))

		By("the second call finds a file nobody writes to any more")
		next := succeeded(waitTerminal(ctx, second, callTimeout))
		out := strings.Split(strings.TrimSpace(content(next)["stdout"].(string)), "\n")
		Expect(out).To(HaveLen(2), "stdout %q", out)
		counts := strings.Fields(out[0])
		Expect(counts).To(HaveLen(2))
		Expect(counts[0]).To(Equal(counts[1]), "notes.txt grew while the second call read it")
		Expect(out[1]).To(Equal("line "+counts[0]), "the last line is whole and the last written")
		AddReportEntry("lines the body wrote", counts[0])
	}, SpecTimeout(5*time.Minute))
})

// bodyRuns: a container of the Pod runs (as its kubelet reports).
func bodyRuns(pod *corev1.Pod) bool {
	for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if cs.State.Running != nil {
			return true
		}
	}
	return false
}

// hasStopping: the call's Executed condition says its end waits for its Pod.
func hasStopping(call *toolgatev1alpha1.ToolCall) bool {
	for _, c := range call.Status.Conditions {
		if c.Type == toolgatev1alpha1.ConditionExecuted && c.Status == metav1.ConditionUnknown && c.Reason == toolgatev1alpha1.ReasonStopping {
			return true
		}
	}
	return false
}
