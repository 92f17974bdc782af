// Package warmpool keeps the tools' warm pools: started Pods of a Tool's (or a
// ClusterTool's) sandbox, each waiting for one call. The Reconciler writes Pods only; the
// warm executor (controllers) claims them. The pool's Pod helpers (BuildPod, Size,
// ClaimDeadline, PodReady, PodEnded, PodSpecMismatch) are exported for that executor.
package warmpool

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
)

// Reconciler keeps each Tool's warm pool: spec.warmPool.size started Pods of the
// Tool's own sandbox, each waiting for one call (the warm executor in controllers claims them). It writes
// Pods only (and a ClusterTool's WarmPool condition), never a ToolCall or the Tool: a pool costs no call a write. Pods of another
// template (the Tool was edited, or the operator's Pod settings changed), Pods that ended
// and Pods idle longer than maxIdle are deleted — with the Pod's resourceVersion as a
// precondition, so a Pod a call claimed meanwhile is never deleted — and replaced. The
// Tool owns its unclaimed Pods: deleting it removes its pool. ClusterTools' pools, one per
// listed namespace, are kept by the same passes (cluster.go).
type Reconciler struct {
	client.Client
	// APIReader lists the pool live: a just-created Pod the cache has not seen yet must
	// count, or a burst of events would overfill the pool.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Clock     clock.PassiveClock
	Job       podspec.Options
	// Recorder reports a ClusterTool's missing pool namespaces; nil: no events.
	Recorder recorder.EventRecorder

	refilled sync.Map // pool Pod uid → struct{}: its refill latency was observed
	kept     sync.Map // ClusterTool name → []gaugeKey: the pools whose gauges were set

	// Keys are the namespaces' frame masters, shared with the ToolCall reconciler (Setup):
	// a pool Pod is created only once its namespace has one.
	Keys FrameKeys
	// Sessions is the session executor's process CA: with it, pooled tools also keep
	// session pool Pods where a ToolScope declares sessionSandbox (session.go). nil: none.
	Sessions SessionTLS
}

// FrameKeys hands out a namespace's frame masters (current first), creating its frame key
// Secret (podcontract.FrameKeySecret) when it does not exist yet.
type FrameKeys interface {
	Ensure(ctx context.Context, namespace string) ([][]byte, error)
}

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/attach,verbs=create
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=toolgate.dev,resources=tools/finalizers;clustertools/finalizers,verbs=update

// Reconcile brings one Tool's pool to its size.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tool := &v1alpha1.Tool{}
	if err := r.Get(ctx, req.NamespacedName, tool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !tool.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector takes the pool with the Tool
	}
	size := Size(&tool.Spec.ToolSpec)
	if !meta.IsStatusConditionTrue(tool.Status.Conditions, v1alpha1.ConditionRegistered) {
		size = 0 // its calls are refused: idle Pods would only cost
	}
	after, err := r.keep(ctx, ToolPool(tool, size))
	return ctrl.Result{RequeueAfter: after}, err
}

// readySince is when the Pod last became Ready (zero: it is not).
func readySince(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// PodEnded: an idle pool Pod whose runner stopped (someone attached to it, a node
// problem) ended: it can never serve a call.
func PodEnded(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return true
	}
	cs := podspec.ToolContainerStatus(pod)
	return cs != nil && cs.State.Terminated != nil
}

// SetupWithManager watches Tools, the Pods they own (a claim changes the owner, which
// brings the Tool back for a refill) and ToolScopes (a sessionSandbox declared or removed
// changes which Pods the namespace's pools keep), and sets up the ClusterTools' pools.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Tool{}).
		Owns(&corev1.Pod{}).
		Watches(&v1alpha1.ToolScope{}, handler.EnqueueRequestsFromMapFunc(r.toolsOfScope)).
		Named("warmpool").
		Complete(r)
	if err != nil {
		return err
	}
	return r.setupClusterPools(mgr)
}
