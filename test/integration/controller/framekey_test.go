package controller_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// expectKeyReferenced checks that a Pod's signer gets name by reference to the Secret
// secret, with no value in the spec, and that no container references the namespace's
// master: a Pod holds its own attempt's key at most.
func expectKeyReferenced(spec corev1.PodSpec, name, secret string) {
	GinkgoHelper()
	var found bool
	for _, c := range spec.Containers {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == podcontract.FrameKeySecret {
				Expect(e.ValueFrom.SecretKeyRef.Key).To(Equal(podcontract.FrameKeySecretHandover), "container %s reads the master", c.Name)
			}
			if e.Name == name {
				Expect(c.Name).To(Equal(podcontract.SignerContainerName), "%s is given to the body's container", name)
				found = true
				Expect(e.Value).To(BeEmpty(), "%s has a value in the spec", e.Name)
				Expect(e.ValueFrom).NotTo(BeNil())
				Expect(e.ValueFrom.SecretKeyRef).To(HaveField("Name", secret))
			}
		}
	}
	Expect(found).To(BeTrue(), "the signer gets %s from the Secret %s", name, secret)
}

// expectNoSecret checks that no spelling of the master or of an attempt's key is anywhere
// in obj (a Job, a Pod), as `kubectl get -o yaml` shows it.
func expectNoSecret(obj any, secrets []string) {
	GinkgoHelper()
	raw, err := json.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	for _, s := range secrets {
		Expect(string(raw)).NotTo(ContainSubstring(s))
	}
}

// frameSecrets are the spellings of the namespace's master and of the call's attempt keys
// that must never be in an object an agent or viewer reads.
func frameSecrets(ctx SpecContext, ns string, call *v1alpha1.ToolCall) []string {
	GinkgoHelper()
	secret := &corev1.Secret{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podcontract.FrameKeySecret}, secret)).To(Succeed())
	text := string(secret.Data[podcontract.FrameKeySecretKey])
	master, err := frame.ParseKey(text)
	Expect(err).NotTo(HaveOccurred(), "the operator made the namespace's master")
	out := []string{text, base64.StdEncoding.EncodeToString(master), base64.StdEncoding.EncodeToString([]byte(text))}
	for _, a := range call.Status.Attempts {
		key := frame.AttemptKey(master, string(call.UID), int(a.Attempt))
		out = append(out, base64.RawURLEncoding.EncodeToString(key), base64.StdEncoding.EncodeToString(key))
	}
	return out
}

var _ = Describe("The frame key", Label("framekey"), func() {
	It("is in no Job or Pod of a call: the signer reads its attempt's own Secret, deleted once the attempt ended", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		create(ctx, MakeToolCall("k1", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "hi"}).Obj())
		call := waitTerminal(ctx, ns, "k1")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		job := &batchv1.Job{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName("k1", 1)}, job)).To(Succeed())
		pod := &corev1.Pod{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: PodName(job.Name)}, pod)).To(Succeed())
		keySecret := podcontract.AttemptKeySecret(job.Name)
		expectKeyReferenced(job.Spec.Template.Spec, podcontract.EnvAttemptKey, keySecret)
		expectKeyReferenced(pod.Spec, podcontract.EnvAttemptKey, keySecret)
		secrets := frameSecrets(ctx, ns, call)
		expectNoSecret(job, secrets)
		expectNoSecret(pod, secrets)
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: keySecret}, &corev1.Secret{}))
		}).WithContext(ctx).Should(BeTrue(), "the attempt's key Secret outlives the attempt")
	})

	It("is in no warm pool Pod either", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).WarmPool(1, 0).Obj())
		pod := readyPool(ctx, ns, 1)[0]
		create(ctx, MakeToolCall("k2", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "hi"}).Obj())
		call := waitTerminal(ctx, ns, "k2")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(call.Status.Attempts[0].Path).To(Equal(v1alpha1.PathWarm))
		expectKeyReferenced(pod.Spec, podcontract.EnvHandoverKeys, podcontract.FrameKeySecret)
		expectNoSecret(&pod, frameSecrets(ctx, ns, call))
		AddReportEntry("claim check (live Pod GET) so far in this process", claimCheckFigures())
	})
})

var _ = Describe("A pool Pod moved into another tool's pool", Label("warm", "framekey"), func() {
	// Someone who may patch Pods gives tool echo's idle Pod the template label and the owner
	// of tool other's pool: a call of other must never run echo's body in it.
	It("is deleted, never claimed", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).WarmPool(1, 0).Obj())
		imposter := readyPool(ctx, ns, 1)[0]
		kubelet.PausePool(true) // other's own Pods stay Pending: the imposter is its only Ready one
		DeferCleanup(kubelet.PausePool, false)
		create(ctx, MakeTool("other", ns).Image("example/other:1").Command("/other").WarmPool(2, 0).Obj())
		var template string
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{podcontract.LabelPool: "other"})).To(Succeed())
			g.Expect(pods.Items).NotTo(BeEmpty())
			template = pods.Items[0].Labels[podcontract.LabelTemplate]
		}).WithContext(ctx).Should(Succeed())
		other := &v1alpha1.Tool{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "other"}, other)).To(Succeed())

		moved := imposter.DeepCopy()
		moved.Labels[podcontract.LabelPool] = "other"
		moved.Labels[podcontract.LabelTemplate] = template
		moved.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Tool",
			Name: other.Name, UID: other.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		Expect(k8sClient.Patch(ctx, moved, client.MergeFrom(&imposter))).To(Succeed())

		create(ctx, MakeToolCall("o1", ns).Tool("other").Requester(AdminUser).Args(map[string]any{}).Obj())
		call := waitTerminal(ctx, ns, "o1")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(call.Status.Attempts[0].PodName).NotTo(Equal(imposter.Name), "the call ran in the other tool's Pod")
		for _, h := range kubelet.Handovers() {
			Expect(h.Pod).NotTo(Equal(imposter.Name), "the moved Pod was handed a call")
		}
		Eventually(func(g Gomega) {
			p := &corev1.Pod{}
			err := k8sClient.Get(ctx, client.ObjectKeyFromObject(&imposter), p)
			g.Expect(apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil).To(BeTrue(), "the moved Pod is kept: %v", err)
		}).WithContext(ctx).Should(Succeed())
	})
})

// claimCheckFigures is what the claims' live Pod GETs took in this process (the operator's
// toolgate_stage_duration_seconds{stage="warm_claim_check"}).
func claimCheckFigures() string {
	m := &dto.Metric{}
	Expect(metrics.StageDuration.WithLabelValues("warm_claim_check").(prometheus.Metric).Write(m)).To(Succeed())
	h := m.GetHistogram()
	if h.GetSampleCount() == 0 {
		return "no claim"
	}
	return fmt.Sprintf("%d GETs, mean %.2f ms", h.GetSampleCount(), 1000*h.GetSampleSum()/float64(h.GetSampleCount()))
}
