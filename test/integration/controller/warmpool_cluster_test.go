package controller_test

import (
	"encoding/json"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

// pooledClusterTool creates a ClusterTool (metadata and model-facing name unique to the
// spec: ClusterTools are seen from every namespace) with a pool of size in namespaces,
// deleted after the spec.
func pooledClusterTool(ctx SpecContext, name string, size int32, namespaces ...string) *v1alpha1.ClusterTool {
	GinkgoHelper()
	ct := MakeClusterTool(name).Image("example/echo:1").Command("/echo").WarmPool(size, 0).WarmPoolNamespaces(namespaces...).Obj()
	create(ctx, ct)
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ct))).To(Succeed()) })
	return ct
}

// warmPoolCondition is the ClusterTool's WarmPool condition, once it has one.
func warmPoolCondition(ctx SpecContext, name string) *metav1.Condition {
	var cond *metav1.Condition
	Eventually(func(g Gomega) {
		ct := &v1alpha1.ClusterTool{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, ct)).To(Succeed())
		cond = meta.FindStatusCondition(ct.Status.Conditions, v1alpha1.ConditionWarmPool)
		g.Expect(cond).NotTo(BeNil())
	}).WithContext(ctx).Should(Succeed())
	return cond
}

// refusePodsIn makes the API server refuse every Pod create in ns (as a quota or an
// admission policy of that namespace would), until the spec ends.
func refusePodsIn(ctx SpecContext, ns string) {
	GinkgoHelper()
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	remove, err := MakeRefusal("no-pods-"+ns, "", "pods", "no Pods here").InNamespace(ns).Apply(ctx, k8sClient, probe)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(remove)
}

func callIn(ctx SpecContext, ns, name, tool, text string) *v1alpha1.ToolCall {
	GinkgoHelper()
	create(ctx, MakeToolCall(name, ns).Tool(tool).Requester(AdminUser).Args(map[string]any{"text": text}).Obj())
	call := waitTerminal(ctx, ns, name)
	Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
	Expect(call.Status.Tool.Kind).To(Equal(v1alpha1.ToolKindClusterTool))
	return call
}

var _ = Describe("A ClusterTool with a warm pool", Label("warm", "clustertool"), func() {
	It("keeps size Pods in each listed namespace, owned by the ClusterTool; calls there run warm, elsewhere cold", func(ctx SpecContext) {
		a, b, elsewhere := newNamespace(ctx), newNamespace(ctx), newNamespace(ctx)
		ct := pooledClusterTool(ctx, "wp-"+a, 2, a, b)
		for _, ns := range []string{a, b} {
			for _, p := range readyPool(ctx, ns, 2) {
				Expect(metav1.IsControlledBy(&p, ct)).To(BeTrue(), "pool Pods go with their ClusterTool")
				Expect(p.Spec.ActiveDeadlineSeconds).To(BeNil())
				Expect(*p.Spec.AutomountServiceAccountToken).To(BeFalse())
				Expect(p.Labels).To(HaveKeyWithValue(podcontract.LabelNetwork, podcontract.NetworkNone))
			}
		}
		Consistently(func(g Gomega) { g.Expect(poolPods(ctx, g, elsewhere)).To(BeEmpty()) }).WithContext(ctx).Should(Succeed())
		cond := warmPoolCondition(ctx, ct.Name)
		Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		Expect(cond.Reason).To(Equal(v1alpha1.ReasonPoolKept))

		claims := testutil.ToFloat64(metrics.WarmClaims.WithLabelValues(b, "ClusterTool", ct.Name))
		warm := callIn(ctx, b, "w1", ct.Name, "warm <bytes> ✓")
		Expect(warm.Status.Attempts[0].Path).To(Equal(v1alpha1.PathWarm))
		Expect(warm.Status.Attempts[0].JobName).To(BeEmpty())
		var content map[string]any
		Expect(json.Unmarshal(warm.Status.Result.Content.Raw, &content)).To(Succeed())
		Expect(content).To(Equal(map[string]any{"text": "warm <bytes> ✓"}))
		Expect(jobsIn(ctx, b)).To(BeEmpty(), "a warm call creates no Job")
		Expect(testutil.ToFloat64(metrics.WarmClaims.WithLabelValues(b, "ClusterTool", ct.Name))).To(Equal(claims + 1))

		misses := testutil.ToFloat64(metrics.WarmMisses.WithLabelValues(elsewhere, "ClusterTool", ct.Name, "unlisted"))
		cold := callIn(ctx, elsewhere, "c1", ct.Name, "cold")
		Expect(cold.Status.Attempts[0].Path).To(BeEmpty())
		Expect(cold.Status.Attempts[0].JobName).To(Equal(podspec.JobName("c1", 1)))
		Expect(testutil.ToFloat64(metrics.WarmMisses.WithLabelValues(elsewhere, "ClusterTool", ct.Name, "unlisted"))).To(Equal(misses + 1))

		pods := readyPool(ctx, b, 2)
		for _, p := range pods {
			Expect(p.Name).NotTo(Equal(warm.Status.Attempts[0].PodName), "the used Pod is replaced")
		}
	})

	It("replaces its Pods in every namespace when its spec changes", func(ctx SpecContext) {
		a, b := newNamespace(ctx), newNamespace(ctx)
		ct := pooledClusterTool(ctx, "wp-"+a, 1, a, b)
		old := readyPool(ctx, a, 1)[0].Labels[podcontract.LabelTemplate]
		readyPool(ctx, b, 1)
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ct), ct)).To(Succeed())
		ct.Spec.Body.Command = []string{"/echo", "--v2"}
		Expect(k8sClient.Update(ctx, ct)).To(Succeed())
		for _, ns := range []string{a, b} {
			Eventually(func(g Gomega) {
				pods := poolPods(ctx, g, ns)
				g.Expect(pods).To(HaveLen(1))
				g.Expect(pods[0].Labels[podcontract.LabelTemplate]).NotTo(Equal(old))
				g.Expect(containerNamed(pods[0].Spec, podcontract.ToolContainerName).Command).To(ContainElement("--v2"))
			}).WithContext(ctx).Should(Succeed())
		}
		call := callIn(ctx, a, "w1", ct.Name, "x")
		Expect(call.Status.Attempts[0].Path).To(Equal(v1alpha1.PathWarm))
	})

	It("skips a listed namespace until it exists, saying so, then keeps its pool", func(ctx SpecContext) {
		a := newNamespace(ctx)
		later := a + "-later"
		ct := pooledClusterTool(ctx, "wp-"+a, 1, a, later)
		readyPool(ctx, a, 1)
		cond := warmPoolCondition(ctx, ct.Name)
		Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		Expect(cond.Reason).To(Equal(v1alpha1.ReasonNamespaceMissing))
		Expect(cond.Message).To(ContainSubstring(later))

		create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: later}})
		readyPool(ctx, later, 1)
		Eventually(func(g Gomega) {
			ct := &v1alpha1.ClusterTool{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "wp-" + a}, ct)).To(Succeed())
			g.Expect(ct.Status.Conditions).To(ContainElement(And(
				HaveField("Type", v1alpha1.ConditionWarmPool), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", v1alpha1.ReasonPoolKept))))
		}).WithContext(ctx).Should(Succeed())
	})

	It("keeps the other namespaces' pools when one namespace refuses its Pods", func(ctx SpecContext) {
		refusing, a := newNamespace(ctx), newNamespace(ctx)
		refusePodsIn(ctx, refusing)
		pooledClusterTool(ctx, "wp-"+a, 1, refusing, a)
		readyPool(ctx, a, 1)
		Consistently(func(g Gomega) { g.Expect(poolPods(ctx, g, refusing)).To(BeEmpty()) }).WithContext(ctx).Should(Succeed())
	})

	It("retires a namespace's Pods when it leaves the list, and every Pod when the pool is removed", func(ctx SpecContext) {
		a, b := newNamespace(ctx), newNamespace(ctx)
		ct := pooledClusterTool(ctx, "wp-"+a, 2, a, b)
		readyPool(ctx, a, 2)
		readyPool(ctx, b, 2)
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ct), ct)).To(Succeed())
		ct.Spec.WarmPool.Namespaces = []string{a}
		Expect(k8sClient.Update(ctx, ct)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(poolPods(ctx, g, b)).To(BeEmpty()) }).WithContext(ctx).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(poolPods(ctx, g, a)).To(HaveLen(2)) }).WithContext(ctx).Should(Succeed())

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ct), ct)).To(Succeed())
		ct.Spec.WarmPool = nil
		Expect(k8sClient.Update(ctx, ct)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(poolPods(ctx, g, a)).To(BeEmpty()) }).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ct), ct)).To(Succeed())
			g.Expect(conditionTypes(ct.Status.Conditions)).NotTo(ContainElement(v1alpha1.ConditionWarmPool))
		}).WithContext(ctx).Should(Succeed())
	})

	It("never gives one Pod to two concurrent calls", func(ctx SpecContext) {
		a := newNamespace(ctx)
		ct := pooledClusterTool(ctx, "wp-"+a, 2, a)
		readyPool(ctx, a, 2)
		const n = 8
		for i := range n {
			create(ctx, MakeToolCall(fmt.Sprintf("c%d", i), a).Tool(ct.Name).Requester(AdminUser).Args(map[string]any{"text": "x"}).Obj())
		}
		pods := map[string]string{}
		for i := range n {
			call := waitTerminal(ctx, a, fmt.Sprintf("c%d", i))
			Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
			if at := call.Status.Attempts[0]; at.Path == v1alpha1.PathWarm {
				Expect(pods).NotTo(HaveKey(at.PodName), "Pod %s given to %s and %s", at.PodName, pods[at.PodName], call.Name)
				pods[at.PodName] = call.Name
			}
		}
		Expect(pods).NotTo(BeEmpty())
		perPod := map[string]int{}
		for _, h := range kubelet.Handovers() {
			if h.Namespace == a {
				perPod[h.Pod]++
			}
		}
		Expect(perPod).To(HaveLen(len(pods)))
		for pod, count := range perPod {
			Expect(count).To(Equal(1), "Pod %s handed over %d times", pod, count)
		}
	})
})

var _ = Describe("Deleting a pooled ClusterTool", Label("warm", "clustertool", "restart"), Serial, func() {
	BeforeEach(func() {
		Expect(mgr.Stop()).To(Succeed())
		mgr = suite.StartManager(env, ManagerOptions{Clock: fakeClock, Kubelet: kubelet, CollectGarbage: true})
		DeferCleanup(func() {
			Expect(mgr.Stop()).To(Succeed())
			startManager()
		})
	})

	It("takes its pool Pods in every namespace with it (garbage collection, by ownerReference)", func(ctx SpecContext) {
		a, b := newNamespace(ctx), newNamespace(ctx)
		ct := pooledClusterTool(ctx, "wp-"+a, 1, a, b)
		readyPool(ctx, a, 1)
		readyPool(ctx, b, 1)
		Expect(k8sClient.Delete(ctx, ct)).To(Succeed())
		for _, ns := range []string{a, b} {
			Eventually(func(g Gomega) { g.Expect(poolPods(ctx, g, ns)).To(BeEmpty()) }).WithContext(ctx).WithTimeout(LongTimeout).Should(Succeed())
		}
	})
})
