package controllers

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/pkg/frame"
)

// WarmPoolReconciler keeps each Tool's warm pool: spec.warmPool.size started Pods of the
// Tool's own sandbox, each waiting for one call (controllers/warmpool_claim.go). It writes
// Pods only, never a ToolCall or the Tool: a pool costs no call a write. Pods of another
// template (the Tool was edited, or the operator's Pod settings changed), Pods that ended
// and Pods idle longer than maxIdle are deleted — with the Pod's resourceVersion as a
// precondition, so a Pod a call claimed meanwhile is never deleted — and replaced. The
// Tool owns its unclaimed Pods: deleting it removes its pool.
type WarmPoolReconciler struct {
	client.Client
	// APIReader lists the pool live: a just-created Pod the cache has not seen yet must
	// count, or a burst of events would overfill the pool.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Clock     clock.PassiveClock
	Job       JobOptions

	refilled sync.Map // pool Pod uid → struct{}: its refill latency was observed
}

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/attach,verbs=create

// Reconcile brings one Tool's pool to its size.
func (r *WarmPoolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tool := &v1alpha1.Tool{}
	if err := r.Get(ctx, req.NamespacedName, tool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !tool.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector takes the pool with the Tool
	}
	size := warmPoolSize(&tool.Spec.ToolSpec)
	if !meta.IsStatusConditionTrue(tool.Status.Conditions, v1alpha1.ConditionRegistered) {
		size = 0 // its calls are refused: idle Pods would only cost
	}
	pods, err := r.poolPods(ctx, tool)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.Clock.Now()
	digest := warmTemplateDigest(&tool.Spec.ToolSpec, r.Job)
	maxIdle := warmMaxIdle(&tool.Spec.ToolSpec)
	var keep []*corev1.Pod
	for _, pod := range pods {
		if len(keep) < size && pod.Labels[LabelTemplate] == digest && !poolPodEnded(pod) && now.Sub(pod.CreationTimestamp.Time) < maxIdle {
			keep = append(keep, pod)
			continue
		}
		if err := r.retire(ctx, pod); err != nil {
			return ctrl.Result{}, err
		}
	}
	for range size - len(keep) {
		if err := r.createPoolPod(ctx, tool); err != nil {
			return ctrl.Result{}, err
		}
	}
	r.record(tool, size, keep)
	if len(keep) == 0 {
		return ctrl.Result{}, nil
	}
	oldest := keep[0].CreationTimestamp.Time
	for _, p := range keep[1:] {
		if p.CreationTimestamp.Before(&metav1.Time{Time: oldest}) {
			oldest = p.CreationTimestamp.Time
		}
	}
	return ctrl.Result{RequeueAfter: max(oldest.Add(maxIdle).Sub(now), time.Second)}, nil
}

// poolPods are the Tool's unclaimed pool Pods that are not being deleted, read live.
func (r *WarmPoolReconciler) poolPods(ctx context.Context, tool *v1alpha1.Tool) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(tool.Namespace),
		client.MatchingLabels{LabelManagedBy: ManagedByValue, LabelPool: ToolLabelValue(tool.Name)}); err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if metav1.IsControlledBy(p, tool) && p.DeletionTimestamp.IsZero() && p.Annotations[AnnotationClaimedBy] == "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// retire deletes a pool Pod unless it changed since it was read (a claim).
func (r *WarmPoolReconciler) retire(ctx context.Context, pod *corev1.Pod) error {
	uid, rv := pod.UID, pod.ResourceVersion
	err := r.Delete(ctx, pod, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	r.refilled.Delete(pod.UID)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // claimed or gone meanwhile: the claim's event brings the pool back
	}
	return err
}

func (r *WarmPoolReconciler) createPoolPod(ctx context.Context, tool *v1alpha1.Tool) error {
	key, err := frame.NewKey()
	if err != nil {
		return err
	}
	pod := buildWarmPod(tool, r.Job, key)
	if err := controllerutil.SetControllerReference(tool, pod, r.Scheme); err != nil {
		return err
	}
	return r.Create(ctx, pod)
}

// record sets the pool's gauges and observes each kept Pod's refill latency once.
func (r *WarmPoolReconciler) record(tool *v1alpha1.Tool, size int, keep []*corev1.Pod) {
	name := resolvedToolName(tool)
	ready := 0
	for _, p := range keep {
		if !podReady(p) {
			continue
		}
		ready++
		if _, seen := r.refilled.LoadOrStore(p.UID, struct{}{}); !seen {
			if at := readySince(p); !at.IsZero() {
				metrics.WarmRefill.WithLabelValues(tool.Namespace, name).Observe(at.Sub(p.CreationTimestamp.Time).Seconds())
			}
		}
	}
	metrics.WarmPoolSize.WithLabelValues(tool.Namespace, name).Set(float64(size))
	metrics.WarmPoolReady.WithLabelValues(tool.Namespace, name).Set(float64(ready))
}

func readySince(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// poolPodEnded: an idle pool Pod whose runner stopped (someone attached to it, a node
// problem) can never serve a call.
func poolPodEnded(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return true
	}
	cs := toolContainerStatus(pod)
	return cs != nil && cs.State.Terminated != nil
}

// SetupWithManager watches Tools and the Pods they own (a claim changes the owner, which
// brings the Tool back for a refill).
func (r *WarmPoolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Tool{}).
		Owns(&corev1.Pod{}).
		Named("warmpool").
		Complete(r)
}
