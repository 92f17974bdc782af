package warmexec

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/warmpool"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// claimTries bounds the claims one attempt makes before it runs cold (each loses only to
// another call's claim of the same Pod).
const claimTries = 5

// Claim runs the call's new attempt in a Ready pool Pod of exactly its admitted snapshot,
// in the call's namespace, when the tool has a pool there (a Tool's is in its namespace; a
// ClusterTool's in the namespaces its snapshot lists: elsewhere the attempt runs cold, a
// miss "unlisted") and the executor can attach: the attempt is then Warm, with the Pod's
// name and no Job. An empty pool, lost races and errors leave the attempt to the next
// executor at once: a call never waits for a pool. In memory but for the claim itself (a
// Pod patch with the Pod's resourceVersion as precondition): the caller writes the status,
// and a restart before that write finds the claimed Pod again (adoptable).
func (w *Executor) Claim(ctx context.Context, call *v1alpha1.ToolCall, a *v1alpha1.Attempt) (string, bool) {
	snap := call.Status.Tool
	if w.attach == nil || snap == nil {
		return "", false
	}
	// A pool Pod started before its call was known: a tool that uses a feature the warm
	// executor does not support (a session's workspace) runs cold, where the Job's Pod has it.
	if missing := warmpool.Unsupported(snap.Spec); missing != "" && warmpool.Declared(snap.Spec) > 0 {
		metrics.WarmMisses.WithLabelValues(call.Namespace, string(snap.Kind), executor.MetricTool(call), string(missing)).Inc()
		return "", false
	}
	if warmpool.Size(snap.Spec) == 0 {
		return "", false
	}
	ns, kind, tool := call.Namespace, string(snap.Kind), executor.MetricTool(call)
	var pod *corev1.Pod
	why := "unlisted" // a ClusterTool keeps pools only in its listed namespaces
	if snap.Kind == v1alpha1.ToolKindTool || slices.Contains(snap.Spec.WarmPool.Namespaces, ns) {
		why = "error"
		// A pool Pod reads the namespace's frame master; the handover is authenticated with it.
		if _, err := w.Keys.Ensure(ctx, ns); err == nil {
			pod, why = w.claimPod(ctx, call, a.Attempt)
		}
	}
	if pod == nil {
		metrics.WarmMisses.WithLabelValues(ns, kind, tool, why).Inc()
		return "", false
	}
	metrics.WarmClaims.WithLabelValues(ns, kind, tool).Inc()
	a.Path, a.PodName, a.JobName = v1alpha1.PathWarm, pod.Name, ""
	call.Status.Job = nil
	ctrl.LoggerFrom(ctx).Info("claimed warm Pod", "pod", pod.Name, "attempt", a.Attempt)
	return "warm Pod " + pod.Name, true
}

// claimPod adopts the Pod this call's attempt already claimed (a restart before the status
// write), else claims a Ready one of the call's template; why says why none was had.
func (w *Executor) claimPod(ctx context.Context, call *v1alpha1.ToolCall, n int32) (*corev1.Pod, string) {
	attempt := strconv.Itoa(int(n))
	mine := &corev1.PodList{}
	if err := w.List(ctx, mine, client.InNamespace(call.Namespace), client.MatchingFields{executor.IndexCallName: call.Name}); err != nil {
		return nil, "error"
	}
	for i := range mine.Items {
		if p := &mine.Items[i]; p.Annotations[podcontract.AnnotationClaimedBy] == string(call.UID) && p.Labels[podcontract.LabelAttempt] == attempt {
			return p, ""
		}
	}
	free := &corev1.PodList{}
	if err := w.List(ctx, free, client.InNamespace(call.Namespace), client.MatchingLabels{
		podcontract.LabelManagedBy: podcontract.ManagedByValue, podcontract.LabelTemplate: podspec.WarmTemplateDigest(call.Status.Tool.Spec, w.Options.Job)}); err != nil {
		return nil, "error"
	}
	var candidates []*corev1.Pod
	for i := range free.Items {
		if p := &free.Items[i]; claimable(p) && warmpool.PooledBy(p, call.Status.Tool) {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return nil, "empty"
	}
	toolUID, err := warmpool.OwnerUID(ctx, w.Client, call.Status.Tool, call.Namespace)
	if err != nil {
		return nil, "error"
	}
	want := podspec.WarmPodSpec(call.Status.Tool.Spec, w.Options.Job)
	rand.Shuffle(len(candidates), func(i, j int) { candidates[i], candidates[j] = candidates[j], candidates[i] })
	for _, c := range candidates[:min(claimTries, len(candidates))] {
		p, err := w.vetted(ctx, call, c, toolUID, &want)
		if err == nil && p == nil {
			continue // claimed meanwhile, gone, or not the tool's: deleted
		}
		if err == nil {
			err = w.claimFor(ctx, call, p, attempt)
		}
		switch {
		case err == nil:
			return p, ""
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			continue // another call claimed it first, or the pool retired it
		default:
			ctrl.LoggerFrom(ctx).Info("claiming a warm Pod failed; running cold", "pod", p.Name, "error", err.Error())
			return nil, "error"
		}
	}
	return nil, "conflict"
}

// claimable: an idle pool Pod, Ready, not ended, not claimed, not being deleted.
func claimable(p *corev1.Pod) bool {
	return p.Labels[podcontract.LabelPool] != "" && p.Annotations[podcontract.AnnotationClaimedBy] == "" &&
		p.DeletionTimestamp.IsZero() && warmpool.PodReady(p) && !warmpool.PodEnded(p)
}

// vetted reads candidate c live — the cache keeps no Pod spec, and labels and owners are
// only what whoever may patch Pods wrote — and returns it when it is still claimable, its
// controller owner is the call's tool with that tool's uid, and its spec is the one the
// call's snapshot builds (want: warmpool.PodSpecMismatch). A Pod that is not the tool's is deleted,
// never claimed; one claimed meanwhile or gone is skipped (nil, nil). This GET is what the
// check adds to a claim (toolgate_stage_duration_seconds{stage="warm_claim_check"}).
func (w *Executor) vetted(ctx context.Context, call *v1alpha1.ToolCall, c *corev1.Pod, toolUID types.UID, want *corev1.PodSpec) (*corev1.Pod, error) {
	begun := time.Now() // a latency, on the process clock (the injected one may be a test's)
	live := &corev1.Pod{}
	err := w.APIReader.Get(ctx, client.ObjectKeyFromObject(c), live)
	metrics.StageDuration.WithLabelValues("warm_claim_check").Observe(time.Since(begun).Seconds())
	if apierrors.IsNotFound(err) || err == nil && (live.UID != c.UID || !claimable(live)) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	why := warmpool.PodSpecMismatch(&live.Spec, want)
	if owner := metav1.GetControllerOf(live); owner == nil || owner.UID != toolUID || !warmpool.PooledBy(live, call.Status.Tool) {
		why = "its owner is not the call's tool"
	}
	if why == "" {
		return live, nil
	}
	snap := call.Status.Tool
	metrics.WarmPodsRejected.WithLabelValues(call.Namespace, string(snap.Kind), executor.MetricTool(call), "claim").Inc()
	ctrl.LoggerFrom(ctx).Info("deleting a pool Pod that is not the call's tool's; not claimed", "pod", live.Name, "why", why)
	uid := live.UID
	if err := w.Delete(ctx, live, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		ctrl.LoggerFrom(ctx).Error(err, "could not delete a pool Pod that is not its tool's", "pod", live.Name)
	}
	return nil, nil
}

// claim makes pod the call's with one patch that carries the resourceVersion it was read
// at: two calls can never both win one Pod. The Pod leaves its pool (podcontract.LabelPool removed,
// owned by the call instead of the Tool, so it goes with the call) and gets the call's
// labels (NetworkPolicies select podcontract.LabelNetwork, kept) and its deadline.
func (w *Executor) claimFor(ctx context.Context, call *v1alpha1.ToolCall, pod *corev1.Pod, attempt string) error {
	orig := pod.DeepCopy()
	delete(pod.Labels, podcontract.LabelPool)
	pod.Labels[podcontract.LabelCall] = podspec.CallLabelValue(call.Name)
	pod.Labels[podcontract.LabelAttempt] = attempt
	pod.Labels[podcontract.LabelTool] = podspec.ToolLabelValue(call.Spec.Tool)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[podcontract.AnnotationClaimedBy] = string(call.UID)
	pod.Annotations[podcontract.AnnotationCallName] = call.Name
	pod.Annotations[podcontract.AnnotationTool] = call.Spec.Tool
	pod.Annotations[podcontract.AnnotationArgDigest] = call.Status.ArgumentsDigest
	pod.OwnerReferences = nil
	if err := controllerutil.SetControllerReference(call, pod, w.Scheme); err != nil {
		return err
	}
	pod.Spec.ActiveDeadlineSeconds = ptr.To(warmpool.ClaimDeadline(pod, call.Status.Tool.Spec, w.Clock.Now()))
	return w.Patch(ctx, pod, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}
