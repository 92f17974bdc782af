package controller_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// sessionPoolPods are the namespace's unclaimed session pool Pods (pool Pods built as
// session Pods: they carry the session CA's fingerprint).
func sessionPoolPods(ctx SpecContext, g Gomega, ns string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range poolPods(ctx, g, ns) {
		if p.Annotations[podcontract.AnnotationSessionCA] != "" {
			out = append(out, p)
		}
	}
	return out
}

// readySessionPool waits until the namespace holds n Ready session pool Pods.
func readySessionPool(ctx SpecContext, ns string, n int) []corev1.Pod {
	GinkgoHelper()
	return readyPods(ctx, ns, n, sessionPoolPods)
}

func uidsOf(pods []corev1.Pod) []types.UID {
	out := make([]types.UID, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.UID)
	}
	return out
}

// pooledEcho is a pooled tool (no workspace) and its session calls in scope "fast".
func pooledEcho(ns string) *v1alpha1.Tool {
	return MakeTool("pecho", ns).Image("example/echo:1").Command("/echo").WarmPool(2, 0).Obj()
}

func pooledCall(ns, name, session string) *v1alpha1.ToolCall {
	return MakeToolCall(name, ns).Tool("pecho").Scope("fast").Session(session).Requester(AdminUser).Args(map[string]any{"n": name}).Obj()
}

// sessionHandoverOf is the one session handover of the named call in ns.
func sessionHandoverOf(ctx SpecContext, ns, name string) SessionHandover {
	GinkgoHelper()
	call := &v1alpha1.ToolCall{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, call)).To(Succeed())
	var out []SessionHandover
	for _, h := range handoversTo(ns) {
		if h.CallUID == call.UID {
			out = append(out, h)
		}
	}
	Expect(out).To(HaveLen(1), name)
	return out[0]
}

var _ = Describe("Session sandboxes of a tool with a warm pool", Label("session", "session-sandbox", "warm"), func() {
	It("claims a pool Pod for the session's life: its calls run there, no other session's do, and the pool refills", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		robot := bindShippedRole(ctx, ns, AgentRole, "robot")
		create(ctx, MakeToolScope("fast", ns).SessionSandbox(time.Minute).Obj(), pooledEcho(ns))
		pool := readySessionPool(ctx, ns, 2)
		readyPool(ctx, ns, 4) // and the tool's two warm Pods, for calls outside sessions

		create(ctx, pooledCall(ns, "a1", "s"))
		a1 := waitTerminal(ctx, ns, "a1")
		Expect(a1).To(HavePhase(v1alpha1.PhaseSucceeded), explain(a1))
		Expect(a1.Status.Attempts[0].Path).To(Equal(v1alpha1.PathSession))
		first := sessionHandoverOf(ctx, ns, "a1")
		Expect(uidsOf(pool)).To(ContainElement(first.PodUID), "the session's first call ran in a pool Pod")
		Expect(a1.Status.Attempts[0].PodName).To(Equal(first.Pod))
		for _, p := range sessionPods(ctx, Default, ns) {
			Expect(p.Name).NotTo(HavePrefix("toolgate-session-"), "no session Pod was created")
		}
		claimed := &corev1.Pod{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: first.Pod}, claimed)).To(Succeed())
		Expect(claimed.Labels).NotTo(HaveKey(podcontract.LabelPool), "it left its pool")
		Expect(metav1.GetControllerOf(claimed)).To(HaveField("Kind", "ToolScope"), "it is the session's, as a session Pod is")

		By("the pool refills without the claimed Pod")
		Eventually(func(g Gomega) {
			refilled := sessionPoolPods(ctx, g, ns)
			g.Expect(refilled).To(HaveLen(2))
			g.Expect(uidsOf(refilled)).NotTo(ContainElement(first.PodUID))
		}).WithContext(ctx).Should(Succeed())

		By("the session's next calls run in the same Pod")
		for _, name := range []string{"a2", "a3"} {
			create(ctx, pooledCall(ns, name, "s"))
			Expect(waitTerminal(ctx, ns, name)).To(HavePhase(v1alpha1.PhaseSucceeded))
			Expect(sessionHandoverOf(ctx, ns, name).PodUID).To(Equal(first.PodUID), name)
		}

		By("another session, and another requester with the same session name, never get it")
		create(ctx, pooledCall(ns, "b1", "t"))
		Expect(robot.Create(ctx, MakeToolCall("r1", ns).Tool("pecho").Scope("fast").Session("s").Args(map[string]any{"n": "r1"}).Obj())).To(Succeed())
		for _, name := range []string{"b1", "r1"} {
			Expect(waitTerminal(ctx, ns, name)).To(HavePhase(v1alpha1.PhaseSucceeded))
			Expect(sessionHandoverOf(ctx, ns, name).PodUID).NotTo(Equal(first.PodUID), name)
		}
		Expect(jobsIn(ctx, ns)).To(BeEmpty(), "no Job was made")
	})

	It("never claims a Pod relabelled back into the pool after serving a session", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeToolScope("fast", ns).SessionSandbox(time.Minute).Obj(), pooledEcho(ns))
		readySessionPool(ctx, ns, 2)
		// From now on new Pods stay Pending: the pool's refills are never Ready, so the
		// claims below choose among the Pods Ready now.
		kubelet.PausePool(true)
		DeferCleanup(kubelet.PausePool, false)
		create(ctx, pooledCall(ns, "a1", "s"))
		Expect(waitTerminal(ctx, ns, "a1")).To(HavePhase(v1alpha1.PhaseSucceeded))
		used := sessionHandoverOf(ctx, ns, "a1")

		By("someone who may patch Pods makes it look like an unclaimed pool Pod of its tool again")
		tool := &v1alpha1.Tool{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pecho"}, tool)).To(Succeed())
		pod := &corev1.Pod{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: used.Pod}, pod)).To(Succeed())
		orig := pod.DeepCopy()
		// (a pool label the pool itself does not list, so that it does not retire the Pod
		// as one too many: the claim takes any pool Pod its tool controls)
		pod.Labels[podcontract.LabelPool] = "relabelled"
		for _, k := range []string{podcontract.LabelSessionPod, podcontract.LabelSessionRequester} {
			delete(pod.Labels, k)
		}
		for _, k := range []string{podcontract.AnnotationSession, podcontract.AnnotationSessionScope, podcontract.AnnotationSessionRequester} {
			delete(pod.Annotations, k)
		}
		pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(tool, v1alpha1.GroupVersion.WithKind("Tool"))}
		Expect(k8sClient.Patch(ctx, pod, client.MergeFrom(orig))).To(Succeed())

		By("two other sessions' first calls: the one Ready pool Pod left and the relabelled one are the candidates")
		create(ctx, pooledCall(ns, "t1", "t"), pooledCall(ns, "u1", "u"))
		Eventually(func(g Gomega) {
			for _, name := range []string{"t1", "u1"} {
				call := &v1alpha1.ToolCall{}
				g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, call)).To(Succeed())
				g.Expect(call.Status.Attempts).NotTo(BeEmpty())
				g.Expect(call.Status.Attempts[0].PodName).NotTo(BeEmpty())
			}
		}).WithContext(ctx).Should(Succeed())
		kubelet.PausePool(false)
		for _, name := range []string{"t1", "u1"} {
			c := waitTerminal(ctx, ns, name)
			Expect(c).To(HavePhase(v1alpha1.PhaseSucceeded), explain(c))
			Expect(c.Status.Attempts[0].PodName).NotTo(Equal(used.Pod), name)
			Expect(sessionHandoverOf(ctx, ns, name).PodUID).NotTo(Equal(used.PodUID), name)
		}
	})

	It("never claims a pool Pod of another operator process, nor one its tool does not own", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.PausePool(true)
		DeferCleanup(kubelet.PausePool, false)
		create(ctx, MakeToolScope("fast", ns).SessionSandbox(time.Minute).Obj(), pooledEcho(ns))
		var model corev1.Pod
		Eventually(func(g Gomega) {
			pods := sessionPoolPods(ctx, g, ns)
			g.Expect(pods).NotTo(BeEmpty())
			model = pods[0]
		}).WithContext(ctx).Should(Succeed())

		forge := func(name string, edit func(p *corev1.Pod)) *corev1.Pod {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{}, Annotations: map[string]string{},
				OwnerReferences: model.OwnerReferences}, Spec: *model.Spec.DeepCopy()}
			for k, v := range model.Labels {
				p.Labels[k] = v
			}
			for k, v := range model.Annotations {
				p.Annotations[k] = v
			}
			for i := range p.Spec.Volumes {
				if v := p.Spec.Volumes[i].Secret; v != nil && v.SecretName == model.Name {
					v.SecretName = name // as the pool builds a Pod of this name
				}
			}
			edit(p)
			create(ctx, p)
			// Started and Ready, as a kubelet would report it (the other process's may be
			// retired already).
			Eventually(func(g Gomega) {
				live := &corev1.Pod{}
				if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(p), live); apierrors.IsNotFound(err) || !live.DeletionTimestamp.IsZero() {
					return
				}
				now := metav1.Now()
				live.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, PodIP: "10.9.9.9",
					Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
				g.Expect(client.IgnoreNotFound(k8sClient.Status().Update(ctx, live))).To(Succeed())
			}).WithContext(ctx).Should(Succeed())
			return p
		}
		other := forge("pecho-warms-other", func(p *corev1.Pod) {
			p.Labels[podcontract.LabelTemplate] = strings.Repeat("0", 32) // another CA's template
			p.Annotations[podcontract.AnnotationSessionCA] = "0123456789abcdef"
		})
		notOwned := forge("pecho-warms-stray", func(p *corev1.Pod) {
			p.OwnerReferences[0].UID = "not-the-tools-uid"
		})

		By("the other process's Pod is retired by the pool")
		Eventually(func(g Gomega) {
			err := k8sClient.Get(ctx, client.ObjectKeyFromObject(other), &corev1.Pod{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}).WithContext(ctx).Should(Succeed())

		By("the Pod its tool does not own is deleted at the claim, and the session starts a Pod of its own")
		create(ctx, pooledCall(ns, "a1", "s"))
		Eventually(func(g Gomega) {
			err := k8sClient.Get(ctx, client.ObjectKeyFromObject(notOwned), &corev1.Pod{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}).WithContext(ctx).Should(Succeed())
		kubelet.PausePool(false)
		a1 := waitTerminal(ctx, ns, "a1")
		Expect(a1).To(HavePhase(v1alpha1.PhaseSucceeded), explain(a1))
		h := sessionHandoverOf(ctx, ns, "a1")
		Expect(h.PodUID).NotTo(BeElementOf(other.UID, notOwned.UID))
	})

	It("starts the session's own Pod when the pool is empty", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeToolScope("fast", ns).SessionSandbox(time.Minute).Obj(),
			MakeTool("pecho", ns).Image("example/echo:1").Command("/echo").WarmPool(1, 0).Obj())
		pool := readySessionPool(ctx, ns, 1)
		// From now on new Pods stay Pending: the refill is never Ready, so the next
		// session finds the pool empty.
		kubelet.PausePool(true)
		DeferCleanup(kubelet.PausePool, false)
		create(ctx, pooledCall(ns, "a1", "s"))
		Expect(waitTerminal(ctx, ns, "a1")).To(HavePhase(v1alpha1.PhaseSucceeded))
		Expect(sessionHandoverOf(ctx, ns, "a1").PodUID).To(Equal(pool[0].UID))

		create(ctx, pooledCall(ns, "b1", "t"))
		Eventually(func(g Gomega) {
			names := []string{}
			for _, p := range sessionPods(ctx, g, ns) {
				names = append(names, p.Name)
			}
			g.Expect(names).To(ContainElement(HavePrefix("toolgate-session-")))
		}).WithContext(ctx).Should(Succeed())
		kubelet.PausePool(false)
		b1 := waitTerminal(ctx, ns, "b1")
		Expect(b1).To(HavePhase(v1alpha1.PhaseSucceeded), explain(b1))
		Expect(sessionHandoverOf(ctx, ns, "b1").Pod).To(HavePrefix("toolgate-session-"))
	})

	It("claims a ClusterTool's session pool Pod in a namespace its pool lists", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		ct := pooledClusterTool(ctx, "sp-"+ns, 1, ns)
		create(ctx, MakeToolScope("fast", ns).SessionSandbox(time.Minute).Obj())
		pool := readySessionPool(ctx, ns, 1)
		Expect(metav1.IsControlledBy(&pool[0], ct)).To(BeTrue())
		create(ctx, MakeToolCall("c1", ns).Tool(ct.Name).Scope("fast").Session("s").Requester(AdminUser).Args(map[string]any{"text": "x"}).Obj())
		c1 := waitTerminal(ctx, ns, "c1")
		Expect(c1).To(HavePhase(v1alpha1.PhaseSucceeded), explain(c1))
		Expect(c1.Status.Tool.Kind).To(Equal(v1alpha1.ToolKindClusterTool))
		Expect(sessionHandoverOf(ctx, ns, "c1").PodUID).To(Equal(pool[0].UID))
	})

	It("keeps no session pool Pods for a workspace tool, whose session Pod is created", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		scriptFileTools()
		create(ctx, MakeToolScope("coding", ns).Workspace("1Gi", time.Hour).SessionSandbox(time.Minute).Obj())
		tools := fileTools(ns)
		write := tools[0].(*v1alpha1.Tool)
		write.Spec.WarmPool = &v1alpha1.WarmPool{Size: 2}
		create(ctx, tools...)
		create(ctx, fileCall("w1", ns, "write", "coding", "s1", "f.txt", "one"))
		w1 := waitTerminal(ctx, ns, "w1")
		Expect(w1).To(HavePhase(v1alpha1.PhaseSucceeded), explain(w1))
		Expect(sessionHandoverOf(ctx, ns, "w1").Pod).To(HavePrefix("toolgate-session-"))
		Expect(poolPods(ctx, Default, ns)).To(BeEmpty(), "a workspace tool keeps no pool Pods")
	})

	It("keeps no session pool Pods where no scope declares a session sandbox", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, pooledEcho(ns))
		readyPool(ctx, ns, 2)
		Consistently(func(g Gomega) { g.Expect(sessionPoolPods(ctx, g, ns)).To(BeEmpty()) }).
			WithContext(ctx).WithTimeout(time.Second).Should(Succeed())
		By("declaring one on a scope brings them")
		create(ctx, MakeToolScope("fast", ns).SessionSandbox(time.Minute).Obj())
		readySessionPool(ctx, ns, 2)
	})
})
