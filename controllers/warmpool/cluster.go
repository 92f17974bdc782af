package warmpool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// clusterPools keeps ClusterTools' warm pools. A ClusterTool is global but a call's Pod runs
// in the call's namespace, so its pool is kept per namespace: spec.warmPool.size Pods in each
// of spec.warmPool.namespaces, owned by the ClusterTool (a cluster-scoped owner of namespaced
// Pods: deleting it removes every pool), built exactly as a Tool's (the same template digest,
// so a spec change replaces them all). A listed namespace that does not exist (or is being
// deleted) is skipped and named in the ClusterTool's WarmPool condition; its creation
// brings the ClusterTool back (the Namespace watch). Pods of a namespace dropped from the
// list, and every Pod once the pool is removed, are retired as a Tool's stale Pods are.
type clusterPools struct{ *Reconciler }

// Reconcile brings one ClusterTool's pools to their size.
func (r clusterPools) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tool := &v1alpha1.ClusterTool{}
	if err := r.Get(ctx, req.NamespacedName, tool); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetGauges(req.Name, nil)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !tool.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector takes the pools with the ClusterTool
	}
	size := Size(&tool.Spec)
	if !meta.IsStatusConditionTrue(tool.Status.Conditions, v1alpha1.ConditionRegistered) {
		size = 0 // its calls are refused: idle Pods would only cost
	}
	var listed []string
	if size > 0 {
		listed = tool.Spec.WarmPool.Namespaces
	}
	pass, err := r.keepListed(ctx, tool, size, listed)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.sweep(ctx, tool, pass.served); err != nil {
		return ctrl.Result{}, err
	}
	r.forgetGauges(tool.Name, pass.gauges)
	return ctrl.Result{RequeueAfter: pass.after}, errors.Join(pass.err, r.writePoolCondition(ctx, tool, size > 0, listed, pass.missing))
}

// clusterPass is what one pass over a ClusterTool's listed namespaces found.
type clusterPass struct {
	served, missing []string
	gauges          []gaugeKey
	after           time.Duration // the earliest maxIdle requeue of a kept pool (0: none)
	err             error         // the pools that failed, retried with backoff
}

// keepListed keeps the pool of each listed namespace that exists. A namespace whose pool
// fails (its quota or admission refuses the Pods) does not hold up the others: its error
// goes into the pass's, and the pass is retried with backoff. The error returned is the
// Namespace cache's.
func (r clusterPools) keepListed(ctx context.Context, tool *v1alpha1.ClusterTool, size int, listed []string) (clusterPass, error) {
	var pass clusterPass
	var errs []error
	for _, ns := range listed {
		ok, err := r.namespaceLive(ctx, ns)
		if err != nil {
			return clusterPass{}, err
		}
		if !ok {
			pass.missing = append(pass.missing, ns)
			continue
		}
		pass.served = append(pass.served, ns)
		p := ClusterToolPool(tool, ns, size)
		pass.gauges = append(pass.gauges, gaugeKey{ns, p.name()})
		d, err := r.keep(ctx, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("the warm pool in namespace %s: %w", ns, err))
			continue
		}
		if d > 0 && (pass.after == 0 || d < pass.after) {
			pass.after = d
		}
	}
	pass.err = errors.Join(errs...)
	return pass, nil
}

// namespaceLive reports whether ns exists and is not being deleted (from the cache).
func (r clusterPools) namespaceLive(ctx context.Context, ns string) (bool, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Get(ctx, client.ObjectKey{Name: ns}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return obj.DeletionTimestamp.IsZero(), nil
}

// sweep retires the ClusterTool's unclaimed Pods outside the namespaces it serves (from the
// cache: a Pod the cache has not seen yet brings the ClusterTool back when it is seen).
func (r clusterPools) sweep(ctx context.Context, tool *v1alpha1.ClusterTool, served []string) error {
	list := &corev1.PodList{}
	if err := r.List(ctx, list, client.MatchingLabels{podcontract.LabelManagedBy: podcontract.ManagedByValue, podcontract.LabelPool: podspec.ToolLabelValue(tool.Name)}); err != nil {
		return err
	}
	for _, pod := range unclaimedOf(list.Items, tool) {
		if slices.Contains(served, pod.Namespace) {
			continue
		}
		if err := r.retire(ctx, pod); err != nil {
			return err
		}
	}
	return nil
}

// gaugeKey is one ClusterTool pool's gauge labels (kind ClusterTool).
type gaugeKey struct{ namespace, tool string }

// forgetGauges drops the gauges of the ClusterTool's pools that are not in now (a
// namespace left its list or went away, the pool or the ClusterTool was removed, its
// model-facing name changed) and remembers now.
func (r clusterPools) forgetGauges(name string, now []gaugeKey) {
	if v, ok := r.kept.Load(name); ok {
		for _, k := range v.([]gaugeKey) {
			if !slices.Contains(now, k) {
				metrics.WarmPoolSize.DeleteLabelValues(k.namespace, string(v1alpha1.ToolKindClusterTool), k.tool)
				metrics.WarmPoolReady.DeleteLabelValues(k.namespace, string(v1alpha1.ToolKindClusterTool), k.tool)
			}
		}
	}
	if len(now) == 0 {
		r.kept.Delete(name)
		return
	}
	r.kept.Store(name, now)
}

// setupClusterPools watches ClusterTools, the Pods they own (a claim changes the owner,
// which brings the ClusterTool back for a refill) and Namespaces (metadata only: a listed
// namespace that appears, or goes, brings back the ClusterTools that list it).
func (r *Reconciler) setupClusterPools(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ClusterTool{}).
		Owns(&corev1.Pod{}).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.listingNamespace), builder.OnlyMetadata).
		Watches(&v1alpha1.ToolScope{}, handler.EnqueueRequestsFromMapFunc(r.clusterToolsOfScope)).
		Named("warmpool-cluster").
		Complete(clusterPools{r})
}

func (r *Reconciler) listingNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	tools := &v1alpha1.ClusterToolList{}
	if err := r.List(ctx, tools); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range tools.Items {
		if wp := tools.Items[i].Spec.WarmPool; wp != nil && slices.Contains(wp.Namespaces, o.GetName()) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: tools.Items[i].Name}})
		}
	}
	return reqs
}
