package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// sessionPods are the session Pods of a namespace (not being deleted), by name.
func sessionPods(ctx SpecContext, g Gomega, ns string) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.HasLabels{podcontract.LabelSessionPod})).To(Succeed())
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			out = append(out, p)
		}
	}
	return out
}

// handoversTo are the session handovers the kubelet saw in namespace ns.
func handoversTo(ns string) []SessionHandover {
	var out []SessionHandover
	for _, h := range kubelet.SessionHandovers() {
		if h.Namespace == ns {
			out = append(out, h)
		}
	}
	return out
}

var _ = Describe("Session sandboxes", Label("session", "session-sandbox"), func() {
	It("runs a session's calls of one tool in one Pod, in order, each with its own handover and result", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		scriptFileTools()
		create(ctx, MakeToolScope("coding", ns).Workspace("1Gi", time.Hour).SessionSandbox(time.Minute).Obj())
		create(ctx, fileTools(ns)...)
		for i, content := range []string{"one", "two", "three"} {
			name := []string{"w1", "w2", "w3"}[i]
			create(ctx, fileCall(name, ns, "write", "coding", "s1", "f.txt", content))
			Expect(waitTerminal(ctx, ns, name)).To(HavePhase(v1alpha1.PhaseSucceeded))
		}
		By("the scope's other tool's Pod was started alongside the session's first call")
		var prestarted []corev1.Pod
		Eventually(func(g Gomega) {
			prestarted = sessionPods(ctx, g, ns)
			g.Expect(prestarted).To(HaveLen(2))
		}).WithContext(ctx).Should(Succeed())
		create(ctx, fileCall("r1", ns, "read", "coding", "s1", "f.txt", ""))
		r1 := waitTerminal(ctx, ns, "r1")
		Expect(r1).To(HavePhase(v1alpha1.PhaseSucceeded), explain(r1))
		Expect(string(r1.Status.Result.Content.Raw)).To(ContainSubstring("three"), "the read sees the last write")
		Expect(r1.Status.Attempts[0].Path).To(Equal(v1alpha1.PathSession))
		Expect(r1.Status.Attempts[0].HandoverTime).NotTo(BeNil())

		pods := sessionPods(ctx, Default, ns)
		Expect(pods).To(HaveLen(2), "one Pod per tool of the session")
		hs := handoversTo(ns)
		Expect(hs).To(HaveLen(4))
		Expect(hs[0].PodUID).To(Equal(hs[1].PodUID), "the writes share their Pod")
		Expect(hs[1].PodUID).To(Equal(hs[2].PodUID))
		Expect(hs[3].PodUID).NotTo(Equal(hs[0].PodUID), "the read runs in the read tool's Pod")
		Expect([]types.UID{prestarted[0].UID, prestarted[1].UID}).To(ContainElement(hs[3].PodUID), "the read ran in the Pod started ahead of it")
		for _, h := range hs {
			Expect(h.Refused).To(BeFalse())
		}
		Expect(jobsIn(ctx, ns)).To(BeEmpty(), "no Job was made")
		for _, p := range pods {
			Expect(p.OwnerReferences).To(ContainElement(HaveField("Kind", "ToolScope")))
			Expect(p.Spec.ActiveDeadlineSeconds).To(BeNil())
		}
	})

	It("keeps two requesters with one session name in Pods of their own", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		robot := bindShippedRole(ctx, ns, AgentRole, "robot")
		mallory := bindShippedRole(ctx, ns, AgentRole, "mallory")
		scriptFileTools()
		create(ctx, MakeToolScope("coding", ns).Workspace("1Gi", time.Hour).SessionSandbox(time.Minute).Obj())
		create(ctx, fileTools(ns)...)
		mk := func(name, content string) *v1alpha1.ToolCall {
			return MakeToolCall(name, ns).Tool("write").Scope("coding").Session("shared").Args(map[string]any{"path": "f", "content": content}).Obj()
		}
		Expect(robot.Create(ctx, mk("robot-1", "robot"))).To(Succeed())
		Expect(mallory.Create(ctx, mk("mallory-1", "mallory"))).To(Succeed())
		Expect(waitTerminal(ctx, ns, "robot-1")).To(HavePhase(v1alpha1.PhaseSucceeded))
		Expect(waitTerminal(ctx, ns, "mallory-1")).To(HavePhase(v1alpha1.PhaseSucceeded))
		var writers []corev1.Pod
		for _, p := range sessionPods(ctx, Default, ns) {
			if p.Annotations[podcontract.AnnotationTool] == "write" {
				writers = append(writers, p)
			}
		}
		Expect(writers).To(HaveLen(2), "a Pod per requester")
		Expect(writers[0].Labels[podcontract.LabelSessionRequester]).NotTo(Equal(writers[1].Labels[podcontract.LabelSessionRequester]))
	})

	It("replaces a Pod whose call overran its deadline, and runs the next call in a fresh one", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("sess-slow", Outcome{DeadlineExceeded: true})
		create(ctx, MakeToolScope("fast", ns).SessionSandbox(time.Minute).Obj())
		create(ctx, MakeTool("sess-slow", ns).Image("example/slow:1").Command("/slow").Obj())
		call := func(name string) *v1alpha1.ToolCall {
			return MakeToolCall(name, ns).Tool("sess-slow").Scope("fast").Session("s").Requester(AdminUser).Args(map[string]any{"n": name}).Obj()
		}
		create(ctx, call("c1"))
		c1 := waitTerminal(ctx, ns, "c1")
		Expect(c1).To(HavePhase(v1alpha1.PhaseFailed), explain(c1))
		first := handoversTo(ns)
		Expect(first).To(HaveLen(1))
		Eventually(func(g Gomega) {
			for _, p := range sessionPods(ctx, g, ns) {
				g.Expect(p.UID).NotTo(Equal(first[0].PodUID), "the overrun Pod is gone")
			}
		}).WithContext(ctx).Should(Succeed())
		kubelet.Script("sess-slow", Outcome{Echo: true})
		create(ctx, call("c2"))
		c2 := waitTerminal(ctx, ns, "c2")
		Expect(c2).To(HavePhase(v1alpha1.PhaseSucceeded), explain(c2))
		hs := handoversTo(ns)
		Expect(hs).To(HaveLen(2))
		Expect(hs[1].PodUID).NotTo(Equal(hs[0].PodUID), "the next call ran in a fresh Pod")
	})

	It("never uses a session Pod relabelled into another session", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeToolScope("fast", ns).SessionSandbox(time.Minute).Obj())
		create(ctx, MakeTool("sess-echo", ns).Image("example/echo:1").Command("/echo").Obj())
		call := func(name string) *v1alpha1.ToolCall {
			return MakeToolCall(name, ns).Tool("sess-echo").Scope("fast").Session("s").Requester(AdminUser).Args(map[string]any{"n": name}).Obj()
		}
		create(ctx, call("e1"))
		Expect(waitTerminal(ctx, ns, "e1")).To(HavePhase(v1alpha1.PhaseSucceeded))
		pods := sessionPods(ctx, Default, ns)
		Expect(pods).To(HaveLen(1))
		tampered := pods[0].DeepCopy()
		patch := client.MergeFrom(tampered.DeepCopy())
		tampered.Annotations[podcontract.AnnotationSession] = "another"
		Expect(k8sClient.Patch(ctx, tampered, patch)).To(Succeed())

		create(ctx, call("e2"))
		Expect(waitTerminal(ctx, ns, "e2")).To(HavePhase(v1alpha1.PhaseSucceeded))
		for _, h := range handoversTo(ns)[1:] {
			Expect(h.PodUID).NotTo(Equal(pods[0].UID), "the relabelled Pod served no call")
		}
	})

	It("records a cancelled session call's end only once its Pod has stopped", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("sess-hold", Outcome{After: time.Minute, IgnoreSIGTERM: true, Echo: true})
		create(ctx, MakeToolScope("hold", ns).SessionSandbox(time.Minute).Obj())
		create(ctx, MakeTool("sess-hold", ns).Image("example/hold:1").Command("/hold").Obj())
		create(ctx, MakeToolCall("h1", ns).Tool("sess-hold").Scope("hold").Session("s").Requester(AdminUser).Args(map[string]any{}).Obj())
		Eventually(func(g Gomega) { g.Expect(handoversTo(ns)).To(HaveLen(1)) }).WithContext(ctx).Should(Succeed())
		pod := handoversTo(ns)[0].Pod

		Expect(cancelAs(ctx, k8sClient, ns, "h1")).To(Succeed())
		Eventually(func(g Gomega) {
			h1, p := &v1alpha1.ToolCall{}, &corev1.Pod{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "h1"}, h1)).To(Succeed())
			g.Expect(h1).To(HavePhase(v1alpha1.PhaseRunning), "its body runs on in the deleted Pod")
			g.Expect(h1).To(HaveCondition(v1alpha1.ConditionExecuted, metav1.ConditionUnknown, v1alpha1.ReasonStopping))
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, p)).To(Succeed())
			g.Expect(p.DeletionTimestamp).NotTo(BeNil(), "the body got SIGTERM")
		}).WithContext(ctx).Should(Succeed())

		Expect(kubelet.EndGrace(ctx, ns, pod)).To(Succeed())
		// The Pod's events wake the call (a session Pod carries no mark of its calls: the
		// executor names them, executor.PodWaiters): it ends promptly, not at its own look
		// again, which comes only at the Pod's grace period plus DeadlineGrace (35 s).
		h1 := &v1alpha1.ToolCall{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "h1"}, h1)).To(Succeed())
			g.Expect(h1).To(BeTerminal(), "%s", Explain(h1))
		}).WithContext(ctx).WithTimeout(Timeout).Should(Succeed(), "the Pod's stop wakes the call")
		expectCancelled(h1, pipeline.CancelledWhileRunning)
		Expect(h1.Status.Conditions).To(ContainElement(HaveField("Message", ContainSubstring("every Pod of the attempt has stopped"))))
	})

	It("deletes an idle session Pod after its scope's idle timeout", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeToolScope("fast", ns).SessionSandbox(10*time.Second).Obj())
		create(ctx, MakeTool("sess-idle", ns).Image("example/echo:1").Command("/echo").Obj())
		create(ctx, MakeToolCall("i1", ns).Tool("sess-idle").Scope("fast").Session("s").Requester(AdminUser).Args(map[string]any{}).Obj())
		Expect(waitTerminal(ctx, ns, "i1")).To(HavePhase(v1alpha1.PhaseSucceeded))
		Expect(sessionPods(ctx, Default, ns)).To(HaveLen(1))
		Consistently(func(g Gomega) { g.Expect(sessionPods(ctx, g, ns)).To(HaveLen(1)) }).
			WithContext(ctx).WithTimeout(3*time.Second).Should(Succeed(), "kept while idle less than its timeout")
		fakeClock.Step(11 * time.Second)
		Eventually(func(g Gomega) { g.Expect(sessionPods(ctx, g, ns)).To(BeEmpty()) }).
			WithContext(ctx).Should(Succeed())
	})
})
