package controller_test

import (
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// ttlJob is a toolgate Job for no call, with ttlSecondsAfterFinished, whose simulated body
// echoes its arguments.
func ttlJob(ns string, ttl int32) *batchv1.Job {
	call := MakeToolCall("orphan", ns).Tool("ttl").Requester(AdminUser).Args(map[string]any{}).Obj()
	job := podspec.BuildJob(podspec.Input{Call: call, Attempt: 1,
		Tool:      &v1alpha1.ToolSpec{Body: v1alpha1.ToolBody{Image: "example/ttl:1", RunnerInImage: true}},
		Arguments: []byte(`{}`), Digest: Digest([]byte(`{}`))}, podspec.DefaultOptions())
	job.Spec.TTLSecondsAfterFinished = ptr.To(ttl)
	job.Finalizers = nil
	return job
}

var _ = Describe("The test kit's TTL controller", Label("kit", "retention"), func() {
	It("deletes a finished Job after its TTL with foreground propagation: its Pod first", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		job := ttlJob(ns, 600)
		create(ctx, job)
		pod := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.Succeeded).To(BeNumerically("==", 1))
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			*pod = pods.Items[0]
		}).WithContext(ctx).Should(Succeed())
		// Hold the Pod, to see the Job wait for it.
		controllerutil.AddFinalizer(pod, "test.toolgate.dev/hold")
		Expect(k8sClient.Update(ctx, pod)).To(Succeed())

		finished := job.Status.CompletionTime.Time
		Expect(kubelet.ExpireFinishedJobs(ctx, ns, finished.Add(599*time.Second))).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		Expect(job.DeletionTimestamp.IsZero()).To(BeTrue(), "not due before its TTL")

		Expect(kubelet.ExpireFinishedJobs(ctx, ns, finished.Add(600*time.Second))).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		Expect(pod.DeletionTimestamp.IsZero()).To(BeFalse(), "the Pod is deleted first")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		Expect(job.Finalizers).To(ContainElement(metav1.FinalizerDeleteDependents), "the Job waits for its Pod")

		controllerutil.RemoveFinalizer(pod, "test.toolgate.dev/hold")
		Expect(k8sClient.Update(ctx, pod)).To(Succeed())
		Eventually(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(job), job) }).
			WithContext(ctx).Should(Satisfy(apierrors.IsNotFound), "then the Job goes")
	})

	It("expires Jobs by itself on the real clock", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		job := ttlJob(ns, 1)
		create(ctx, job)
		Eventually(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(job), job) }).
			WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))
		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		Expect(slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp.IsZero() })).
			To(BeFalse(), "its Pod went with it")
	})
})
