package controllers

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
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/framekeys"
	"github.com/toolgate/toolgate/internal/podspec"
)

// WarmPoolReconciler keeps each Tool's warm pool: spec.warmPool.size started Pods of the
// Tool's own sandbox, each waiting for one call (controllers/warmpool_claim.go). It writes
// Pods only, never a ToolCall or the Tool: a pool costs no call a write. Pods of another
// template (the Tool was edited, or the operator's Pod settings changed), Pods that ended
// and Pods idle longer than maxIdle are deleted — with the Pod's resourceVersion as a
// precondition, so a Pod a call claimed meanwhile is never deleted — and replaced. The
// Tool owns its unclaimed Pods: deleting it removes its pool. ClusterTools' pools, one per
// listed namespace, are kept by the same passes (warmpool_cluster.go).
type WarmPoolReconciler struct {
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

	// keys are the namespaces' frame masters (shared with the ToolCall reconciler by Setup;
	// made on first use otherwise): a pool Pod is created only once its namespace has one.
	keys     *framekeys.Store
	keysOnce sync.Once
}

func (r *WarmPoolReconciler) frameKeys() *framekeys.Store {
	r.keysOnce.Do(func() {
		if r.keys == nil {
			r.keys = framekeys.New(r.Client, r.APIReader, r.Clock)
		}
	})
	return r.keys
}

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/attach,verbs=create
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=toolgate.dev,resources=tools/finalizers;clustertools/finalizers,verbs=update

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
	after, err := r.keep(ctx, toolPool(tool, size))
	return ctrl.Result{RequeueAfter: after}, err
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
	cs := podspec.ToolContainerStatus(pod)
	return cs != nil && cs.State.Terminated != nil
}

// SetupWithManager watches Tools and the Pods they own (a claim changes the owner, which
// brings the Tool back for a refill), and sets up the ClusterTools' pools.
func (r *WarmPoolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Tool{}).
		Owns(&corev1.Pod{}).
		Named("warmpool").
		Complete(r)
	if err != nil {
		return err
	}
	return r.setupClusterPools(mgr)
}
