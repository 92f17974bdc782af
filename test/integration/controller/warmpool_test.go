package controller_test

import (
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// poolPods are the namespace's unclaimed, live pool Pods.
func poolPods(ctx SpecContext, g Gomega, ns string) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.HasLabels{podcontract.LabelPool})).To(Succeed())
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			out = append(out, p)
		}
	}
	return out
}

// readyPool waits until the namespace's pool holds n Ready Pods and returns them.
func readyPool(ctx SpecContext, ns string, n int) []corev1.Pod {
	return readyPods(ctx, ns, n, poolPods)
}

// readyPods waits until list gives n Ready Pods of the namespace and returns them.
func readyPods(ctx SpecContext, ns string, n int, list func(SpecContext, Gomega, string) []corev1.Pod) []corev1.Pod {
	GinkgoHelper()
	var pods []corev1.Pod
	Eventually(func(g Gomega) {
		pods = list(ctx, g, ns)
		g.Expect(pods).To(HaveLen(n))
		for _, p := range pods {
			g.Expect(p.Status.Conditions).To(ContainElement(HaveField("Type", corev1.PodReady)), p.Name)
		}
	}).WithContext(ctx).Should(Succeed())
	return pods
}

func jobsIn(ctx SpecContext, ns string) []batchv1.Job {
	jobs := &batchv1.JobList{}
	Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
	return jobs.Items
}

var _ = Describe("A Tool with a warm pool", Label("warm"), func() {
	It("keeps size Pods of its own sandbox, owned by the Tool, waiting for one call each", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).WarmPool(2, 0).Obj())
		pods := readyPool(ctx, ns, 2)
		tool := &v1alpha1.Tool{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "echo"}, tool)).To(Succeed())
		for _, p := range pods {
			Expect(metav1.IsControlledBy(&p, tool)).To(BeTrue(), "pool Pods go with their Tool")
			Expect(p.Spec.ActiveDeadlineSeconds).To(BeNil())
			c := containerNamed(p.Spec, podcontract.SignerContainerName)
			Expect(c.Stdin && c.StdinOnce).To(BeTrue())
			Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
			Expect(*p.Spec.AutomountServiceAccountToken).To(BeFalse())
			Expect(p.Labels).To(HaveKeyWithValue(podcontract.LabelNetwork, podcontract.NetworkNone))
			for _, e := range c.Env {
				Expect(e.Name).NotTo(BeElementOf(podcontract.EnvArgs, podcontract.EnvArgsDigest), "a pool Pod knows no call")
			}
		}
		calls := &v1alpha1.ToolCallList{}
		Expect(k8sClient.List(ctx, calls, client.InNamespace(ns))).To(Succeed())
		Expect(calls.Items).To(BeEmpty())
	})

	It("keeps no Pods for a tool that uses a feature the warm executor does not support (a workspace)", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeTool("files", ns).Image("example/echo:1").Command("/echo").
			Workspace(v1alpha1.WorkspaceReadWrite).WarmPool(2, 0).Obj())
		create(ctx, echoTool(ns).WarmPool(1, 0).Obj())
		readyPool(ctx, ns, 1)
		Consistently(func(g Gomega) {
			pods := poolPods(ctx, g, ns)
			g.Expect(pods).To(HaveLen(1), "no call could claim a Pod of the workspace tool's pool")
			g.Expect(pods[0].Annotations).To(HaveKeyWithValue(podcontract.AnnotationTool, "echo"))
		}).WithContext(ctx).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("runs a call in a claimed Pod with the frozen bytes, then deletes the Pod and refills the pool", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).WarmPool(2, 0).Obj())
		readyPool(ctx, ns, 2)
		create(ctx, MakeToolCall("w1", ns).Tool("echo").Requester(AdminUser).Args([]byte(`{ "text": "hi", "a": 1 }`)).Obj())
		call := waitTerminal(ctx, ns, "w1")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(call.Status.Attempts).To(HaveLen(1))
		a := call.Status.Attempts[0]
		Expect(a.Path).To(Equal(v1alpha1.PathWarm))
		Expect(a.PodName).NotTo(BeEmpty())
		Expect(a.JobName).To(BeEmpty())
		Expect(a.HandoverTime).NotTo(BeNil())
		Expect(call.Status.Job).To(BeNil())
		var content map[string]any
		Expect(json.Unmarshal(call.Status.Result.Content.Raw, &content)).To(Succeed())
		Expect(content).To(Equal(map[string]any{"a": 1.0, "text": "hi"}))
		Expect(jobsIn(ctx, ns)).To(BeEmpty(), "a warm call creates no Job")
		Eventually(func(g Gomega) {
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.PodName}, &corev1.Pod{})
			if err == nil {
				p := &corev1.Pod{}
				g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.PodName}, p)).To(Succeed())
				g.Expect(p.DeletionTimestamp).NotTo(BeNil())
				return
			}
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}).WithContext(ctx).Should(Succeed(), "a used Pod is deleted")
		pods := readyPool(ctx, ns, 2)
		for _, p := range pods {
			Expect(p.Name).NotTo(Equal(a.PodName))
		}
	})

	It("sets the claimed Pod's activeDeadlineSeconds, and a Pod killed at it ends DeadlineExceeded", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeTool("slow", ns).Image("example/sleep:1").Timeout(2*time.Second).WarmPool(1, 0).Obj())
		kubelet.Script("slow", Outcome{DeadlineExceeded: true, After: 500 * time.Millisecond})
		readyPool(ctx, ns, 1)
		create(ctx, MakeToolCall("s1", ns).Tool("slow").Requester(AdminUser).Args(map[string]any{}).Obj())
		Eventually(func(g Gomega) {
			call := &v1alpha1.ToolCall{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s1"}, call)).To(Succeed())
			g.Expect(call.Status.Attempts).NotTo(BeEmpty())
			p := &corev1.Pod{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: call.Status.Attempts[0].PodName}, p)).To(Succeed())
			g.Expect(p.Spec.ActiveDeadlineSeconds).To(HaveValue(BeNumerically(">=", 2)))
			g.Expect(p.Labels).NotTo(HaveKey(podcontract.LabelPool))
		}).WithContext(ctx).Should(Succeed())
		call := waitTerminal(ctx, ns, "s1")
		Expect(call).To(HavePhase(v1alpha1.PhaseFailed))
		Expect(call.Status.Result.Reason).To(Equal(v1alpha1.ReasonDeadlineExceeded), explain(call))
		Expect(call.Status.Attempts[0].Path).To(Equal(v1alpha1.PathWarm))
	})

	It("ends non-zero exits and OOM kills isError, as cold", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeTool("fails", ns).WarmPool(1, 0).Obj(), MakeTool("oom", ns).WarmPool(1, 0).Obj())
		kubelet.Script("fails", Outcome{ExitCode: 3, Stderr: "boom"})
		kubelet.Script("oom", Outcome{Signal: "SIGKILL", ExitCode: 137, Reason: "OOMKilled"})
		readyPool(ctx, ns, 2)
		create(ctx, MakeToolCall("f1", ns).Tool("fails").Requester(AdminUser).Args(map[string]any{}).Obj(),
			MakeToolCall("o1", ns).Tool("oom").Requester(AdminUser).Args(map[string]any{}).Obj())
		for name, reason := range map[string]string{"f1": v1alpha1.ReasonNonZeroExit, "o1": v1alpha1.ReasonOOMKilled} {
			call := waitTerminal(ctx, ns, name)
			Expect(call.Status.Result.IsError).To(BeTrue())
			Expect(call.Status.Result.Reason).To(Equal(reason), explain(call))
			Expect(call.Status.Attempts[0].Path).To(Equal(v1alpha1.PathWarm))
		}
	})

	It("never gives one Pod to two calls", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).WarmPool(2, 0).Obj())
		readyPool(ctx, ns, 2)
		const n = 8
		for i := range n {
			create(ctx, MakeToolCall(fmt.Sprintf("c%d", i), ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "x"}).Obj())
		}
		pods := map[string]string{}
		warm := 0
		for i := range n {
			call := waitTerminal(ctx, ns, fmt.Sprintf("c%d", i))
			Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
			if a := call.Status.Attempts[0]; a.Path == v1alpha1.PathWarm {
				warm++
				Expect(pods).NotTo(HaveKey(a.PodName), "Pod %s given to %s and %s", a.PodName, pods[a.PodName], call.Name)
				pods[a.PodName] = call.Name
			}
		}
		Expect(warm).To(BeNumerically(">=", 1))
		perPod := map[string]int{}
		for _, h := range kubelet.Handovers() {
			if h.Namespace == ns {
				perPod[h.Pod]++
			}
		}
		Expect(perPod).To(HaveLen(warm))
		for pod, count := range perPod {
			Expect(count).To(Equal(1), "Pod %s handed over %d times", pod, count)
		}
	})

	It("refuses a second claim of one Pod: the claim carries the Pod's resourceVersion", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).WarmPool(1, 0).Obj())
		pod := readyPool(ctx, ns, 1)[0]
		claim := func(uid string) error {
			p := pod.DeepCopy()
			p.Annotations[podcontract.AnnotationClaimedBy] = uid
			return k8sClient.Patch(ctx, p, client.MergeFromWithOptions(&pod, client.MergeFromWithOptimisticLock{}))
		}
		Expect(claim("first")).To(Succeed())
		Expect(claim("second")).To(BeAPIError(metav1.StatusReasonConflict))
	})

	It("replaces its Pods when the Tool's spec changes, and calls only get Pods of their snapshot", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).WarmPool(2, 0).Obj())
		old := readyPool(ctx, ns, 2)
		tool := &v1alpha1.Tool{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "echo"}, tool)).To(Succeed())
		tool.Spec.Body.Command = []string{"/echo", "--v2"}
		Expect(k8sClient.Update(ctx, tool)).To(Succeed())
		Eventually(func(g Gomega) {
			pods := poolPods(ctx, g, ns)
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.Labels[podcontract.LabelTemplate]).NotTo(Equal(old[0].Labels[podcontract.LabelTemplate]))
				g.Expect(containerNamed(p.Spec, podcontract.ToolContainerName).Command).To(ContainElement("--v2"))
			}
		}).WithContext(ctx).Should(Succeed())
	})

	It("runs a call cold at once when no Pod is Ready", func(ctx SpecContext) {
		kubelet.PausePool(true)
		DeferCleanup(kubelet.PausePool, false)
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).WarmPool(2, 0).Obj())
		Eventually(func(g Gomega) { g.Expect(poolPods(ctx, g, ns)).To(HaveLen(2)) }).WithContext(ctx).Should(Succeed())
		create(ctx, MakeToolCall("cold", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "x"}).Obj())
		call := waitTerminal(ctx, ns, "cold")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(call.Status.Attempts[0].Path).To(BeEmpty())
		Expect(call.Status.Attempts[0].JobName).To(Equal(podspec.JobName("cold", 1)))
		Expect(jobsIn(ctx, ns)).To(HaveLen(1))
	})
})
