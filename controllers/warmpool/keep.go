package warmpool

import (
	"context"
	"slices"
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

// Pool is one warm pool: the Pods its owner (a Tool, or a ClusterTool) keeps in one
// namespace. A Tool has one pool, in its namespace; a ClusterTool one per namespace of
// spec.warmPool.namespaces.
type Pool struct {
	owner     client.Object
	kind      v1alpha1.ToolKind
	namespace string
	spec      *v1alpha1.ToolSpec
	size      int
}

// ToolPool is a Tool's pool of size Pods, in its namespace.
func ToolPool(tool *v1alpha1.Tool, size int) Pool {
	return Pool{owner: tool, kind: v1alpha1.ToolKindTool, namespace: tool.Namespace, spec: &tool.Spec.ToolSpec, size: size}
}

// ClusterToolPool is a ClusterTool's pool of size Pods in namespace.
func ClusterToolPool(tool *v1alpha1.ClusterTool, namespace string, size int) Pool {
	return Pool{owner: tool, kind: v1alpha1.ToolKindClusterTool, namespace: namespace, spec: &tool.Spec, size: size}
}

// name is the tool's model-facing name (the metrics' tool label).
func (p Pool) name() string { return catalog.ToolName(p.spec, p.owner.GetName()) }

// podKind is one kind of Pod a pool keeps: size Pods of one template.
type podKind struct {
	digest string
	size   int
	want   func(name string) corev1.PodSpec
	create func(ctx context.Context) error
}

// kinds are the kinds of Pod p keeps: its warm Pods, and, where sessions are declared and
// the session CA is known, its session pool Pods (session.go).
func (r *Reconciler) kinds(ctx context.Context, p Pool) ([]podKind, error) {
	warm := podspec.WarmPodSpec(p.spec, r.Job)
	kinds := []podKind{{digest: podspec.WarmTemplateDigest(p.spec, r.Job), size: p.size,
		want:   func(string) corev1.PodSpec { return warm },
		create: func(ctx context.Context) error { return r.createPoolPod(ctx, p) }}}
	if r.Sessions == nil || p.size == 0 {
		return kinds, nil
	}
	declared, err := r.sessionsDeclared(ctx, p.namespace)
	if err != nil || !declared {
		return kinds, err
	}
	return append(kinds, podKind{digest: SessionTemplateDigest(p.spec, r.Job, r.Sessions.Fingerprint()), size: p.size,
		want:   func(name string) corev1.PodSpec { return SessionPodSpec(p.spec, r.Job, name) },
		create: func(ctx context.Context) error { return r.createSessionPod(ctx, p) }}), nil
}

// keep brings one pool to its size: Pods of another template (of another operator
// process's session CA), Pods that ended and Pods idle past maxIdle are retired, missing
// ones created, for each kind it keeps. It returns when the oldest kept Pod reaches
// maxIdle (0: no Pod kept).
func (r *Reconciler) keep(ctx context.Context, p Pool) (time.Duration, error) {
	pods, err := r.poolPods(ctx, p)
	if err != nil {
		return 0, err
	}
	kinds, err := r.kinds(ctx, p)
	if err != nil {
		return 0, err
	}
	now := r.Clock.Now()
	maxIdle := warmMaxIdle(p.spec)
	kept := make([][]*corev1.Pod, len(kinds))
	for _, pod := range pods {
		i := slices.IndexFunc(kinds, func(k podKind) bool { return pod.Labels[podcontract.LabelTemplate] == k.digest })
		// A Pod moved into this pool (its labels and owner patched) whose spec is another
		// body's is never kept, hence never claimed.
		if i >= 0 && len(kept[i]) < kinds[i].size && !PodEnded(pod) && now.Sub(pod.CreationTimestamp.Time) < maxIdle {
			if want := kinds[i].want(pod.Name); r.specFits(ctx, p, pod, &want) {
				kept[i] = append(kept[i], pod)
				continue
			}
		}
		if err := r.retire(ctx, pod); err != nil {
			return 0, err
		}
	}
	for i, k := range kinds {
		for range k.size - len(kept[i]) {
			if err := k.create(ctx); err != nil {
				return 0, err
			}
		}
	}
	r.record(p, kept[0])
	all := slices.Concat(kept...)
	if len(all) == 0 {
		return 0, nil
	}
	oldest := all[0].CreationTimestamp.Time
	for _, pod := range all[1:] {
		if pod.CreationTimestamp.Before(&metav1.Time{Time: oldest}) {
			oldest = pod.CreationTimestamp.Time
		}
	}
	return max(oldest.Add(maxIdle).Sub(now), time.Second), nil
}

// poolPods are the pool's unclaimed Pods that are not being deleted, read live.
func (r *Reconciler) poolPods(ctx context.Context, p Pool) ([]*corev1.Pod, error) {
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
func (r *Reconciler) specFits(ctx context.Context, p Pool, pod *corev1.Pod, want *corev1.PodSpec) bool {
	why := PodSpecMismatch(&pod.Spec, want)
	if why == "" {
		return true
	}
	metrics.WarmPodsRejected.WithLabelValues(p.namespace, string(p.kind), p.name(), "pool").Inc()
	ctrl.LoggerFrom(ctx).Info("deleting a pool Pod whose spec is not its pool's", "pod", klog.KObj(pod), "why", why)
	return false
}

// retire deletes a pool Pod unless it changed since it was read (a claim).
func (r *Reconciler) retire(ctx context.Context, pod *corev1.Pod) error {
	uid, rv := pod.UID, pod.ResourceVersion
	err := r.Delete(ctx, pod, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	r.refilled.Delete(pod.UID)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // claimed or gone meanwhile: the claim's event brings the pool back
	}
	return err
}

// createPoolPod creates one Pod of the pool, once its namespace has a frame key Secret.
func (r *Reconciler) createPoolPod(ctx context.Context, p Pool) error {
	// The Pod reads the namespace's frame master from its Secret: it must exist first.
	if _, err := r.Keys.Ensure(ctx, p.namespace); err != nil {
		return err
	}
	pod := BuildPod(p, r.Job)
	if err := controllerutil.SetControllerReference(p.owner, pod, r.Scheme); err != nil {
		return err
	}
	return r.Create(ctx, pod)
}

// record sets the pool's gauges and observes each kept Pod's refill latency once.
func (r *Reconciler) record(p Pool, keep []*corev1.Pod) {
	name, kind := p.name(), string(p.kind)
	ready := 0
	for _, pod := range keep {
		if !PodReady(pod) {
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
