package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/catalog"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// poolRef is one warm pool: the Pods its owner (a Tool, or a ClusterTool) keeps in one
// namespace. A Tool has one pool, in its namespace; a ClusterTool one per namespace of
// spec.warmPool.namespaces.
type poolRef struct {
	owner     client.Object
	kind      v1alpha1.ToolKind
	namespace string
	spec      *v1alpha1.ToolSpec
	size      int
}

func toolPool(tool *v1alpha1.Tool, size int) poolRef {
	return poolRef{owner: tool, kind: v1alpha1.ToolKindTool, namespace: tool.Namespace, spec: &tool.Spec.ToolSpec, size: size}
}

func clusterToolPool(tool *v1alpha1.ClusterTool, namespace string, size int) poolRef {
	return poolRef{owner: tool, kind: v1alpha1.ToolKindClusterTool, namespace: namespace, spec: &tool.Spec, size: size}
}

// name is the tool's model-facing name (the metrics' tool label).
func (p poolRef) name() string { return catalog.ToolName(p.spec, p.owner.GetName()) }

// keep brings one pool to its size: Pods of another template, Pods that ended and Pods
// idle past maxIdle are retired, missing ones created. It returns when the oldest kept Pod
// reaches maxIdle (0: no Pod kept).
func (r *WarmPoolReconciler) keep(ctx context.Context, p poolRef) (time.Duration, error) {
	pods, err := r.poolPods(ctx, p)
	if err != nil {
		return 0, err
	}
	now := r.Clock.Now()
	digest := podspec.WarmTemplateDigest(p.spec, r.Job)
	maxIdle := warmMaxIdle(p.spec)
	want := podspec.WarmPodSpec(p.spec, r.Job)
	var keep []*corev1.Pod
	for _, pod := range pods {
		// A Pod moved into this pool (its labels and owner patched) whose spec is another
		// body's is never kept, hence never claimed.
		ours := pod.Labels[podcontract.LabelTemplate] == digest && r.specFits(ctx, p, pod, &want)
		if len(keep) < p.size && ours && !poolPodEnded(pod) && now.Sub(pod.CreationTimestamp.Time) < maxIdle {
			keep = append(keep, pod)
			continue
		}
		if err := r.retire(ctx, pod); err != nil {
			return 0, err
		}
	}
	for range p.size - len(keep) {
		if err := r.createPoolPod(ctx, p); err != nil {
			return 0, err
		}
	}
	r.record(p, keep)
	if len(keep) == 0 {
		return 0, nil
	}
	oldest := keep[0].CreationTimestamp.Time
	for _, pod := range keep[1:] {
		if pod.CreationTimestamp.Before(&metav1.Time{Time: oldest}) {
			oldest = pod.CreationTimestamp.Time
		}
	}
	return max(oldest.Add(maxIdle).Sub(now), time.Second), nil
}

// poolPods are the pool's unclaimed Pods that are not being deleted, read live.
func (r *WarmPoolReconciler) poolPods(ctx context.Context, p poolRef) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(p.namespace),
		client.MatchingLabels{podcontract.LabelManagedBy: podcontract.ManagedByValue, podcontract.LabelPool: podspec.ToolLabelValue(p.owner.GetName())}); err != nil {
		return nil, err
	}
	return unclaimedOf(list.Items, p.owner), nil
}

// unclaimedOf are the Pods of pods that owner controls, unclaimed and not being deleted.
func unclaimedOf(pods []corev1.Pod, owner client.Object) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if metav1.IsControlledBy(p, owner) && p.DeletionTimestamp.IsZero() && p.Annotations[podcontract.AnnotationClaimedBy] == "" {
			out = append(out, p)
		}
	}
	return out
}

// specFits reports whether the pool Pod's live spec (the pool is listed live, specs and all)
// is the one its pool builds; a Pod that is not is counted and logged here, and retired.
func (r *WarmPoolReconciler) specFits(ctx context.Context, p poolRef, pod *corev1.Pod, want *corev1.PodSpec) bool {
	why := podSpecMismatch(&pod.Spec, want)
	if why == "" {
		return true
	}
	metrics.WarmPodsRejected.WithLabelValues(p.namespace, string(p.kind), p.name(), "pool").Inc()
	ctrl.LoggerFrom(ctx).Info("deleting a pool Pod whose spec is not its pool's", "pod", klog.KObj(pod), "why", why)
	return false
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

func (r *WarmPoolReconciler) createPoolPod(ctx context.Context, p poolRef) error {
	// The Pod reads the namespace's frame master from its Secret: it must exist first.
	if _, err := r.frameKeys().Ensure(ctx, p.namespace); err != nil {
		return err
	}
	pod := buildWarmPod(p, r.Job)
	if err := controllerutil.SetControllerReference(p.owner, pod, r.Scheme); err != nil {
		return err
	}
	return r.Create(ctx, pod)
}

// record sets the pool's gauges and observes each kept Pod's refill latency once.
func (r *WarmPoolReconciler) record(p poolRef, keep []*corev1.Pod) {
	name, kind := p.name(), string(p.kind)
	ready := 0
	for _, pod := range keep {
		if !podReady(pod) {
			continue
		}
		ready++
		if _, seen := r.refilled.LoadOrStore(pod.UID, struct{}{}); !seen {
			if at := readySince(pod); !at.IsZero() {
				metrics.WarmRefill.WithLabelValues(p.namespace, kind, name).Observe(at.Sub(pod.CreationTimestamp.Time).Seconds())
			}
		}
	}
	metrics.WarmPoolSize.WithLabelValues(p.namespace, kind, name).Set(float64(p.size))
	metrics.WarmPoolReady.WithLabelValues(p.namespace, kind, name).Set(float64(ready))
}
