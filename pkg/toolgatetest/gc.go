package toolgatetest

import (
	"context"
	"errors"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// garbageCollector plays the garbage collector's background deletion (envtest runs none)
// for what toolgate's objects own: once a ToolCall is gone, the Jobs and
// ToolCallApprovals whose ownerReferences name it (by uid) are deleted; once a Job is gone,
// the Pods it controls; once a Tool or ClusterTool is gone, its warm pool Pods (a
// ClusterTool's in every namespace). It sweeps the namespace of every ToolCall, Job or Tool
// deletion (every namespace for a ClusterTool's), reading the API server, and relies on
// ownerReferences only, as the real collector does.
type garbageCollector struct {
	c    client.Client
	live client.Reader
}

func setupGarbageCollector(mgr ctrl.Manager) error {
	gc := &garbageCollector{c: mgr.GetClient(), live: mgr.GetAPIReader()}
	onDelete := handler.Funcs{DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.Object.GetNamespace()}})
	}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("simulated-garbage-collector").
		Watches(&v1alpha1.ToolCall{}, onDelete).
		Watches(&batchv1.Job{}, onDelete, builder.WithPredicates(predicate.NewPredicateFuncs(isToolgate))).
		Watches(&v1alpha1.Tool{}, onDelete).
		Watches(&v1alpha1.ClusterTool{}, onDelete).
		Complete(gc)
}

func isToolgate(o client.Object) bool {
	return o.GetLabels()[podcontract.LabelManagedBy] == podcontract.ManagedByValue
}

// Reconcile sweeps one namespace, or every namespace for a cluster-scoped owner's
// deletion (the request's Name is empty).
func (gc *garbageCollector) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := client.InNamespace(req.Namespace)
	jobs, approvals, pods := &batchv1.JobList{}, &v1alpha1.ToolCallApprovalList{}, &corev1.PodList{}
	if err := errors.Join(gc.live.List(ctx, jobs, ns), gc.live.List(ctx, approvals, ns), gc.live.List(ctx, pods, ns)); err != nil {
		return ctrl.Result{}, err
	}
	var errs []error
	for i := range jobs.Items {
		errs = append(errs, gc.collect(ctx, &jobs.Items[i], "ToolCall", &v1alpha1.ToolCall{}))
	}
	for i := range approvals.Items {
		errs = append(errs, gc.collect(ctx, &approvals.Items[i], "ToolCall", &v1alpha1.ToolCall{}))
	}
	for i := range pods.Items {
		errs = append(errs, gc.collect(ctx, &pods.Items[i], "Job", &batchv1.Job{}),
			gc.collect(ctx, &pods.Items[i], "Tool", &v1alpha1.Tool{}),
			gc.collect(ctx, &pods.Items[i], "ClusterTool", &v1alpha1.ClusterTool{}))
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// collect deletes o (background) when an owner of kind ownerKind it names is gone: no
// object of that name, or one with another uid.
func (gc *garbageCollector) collect(ctx context.Context, o client.Object, ownerKind string, owner client.Object) error {
	if !o.GetDeletionTimestamp().IsZero() {
		return nil
	}
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind != ownerKind {
			continue
		}
		key := types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}
		if ownerKind == "ClusterTool" {
			key.Namespace = "" // a cluster-scoped owner
		}
		err := gc.live.Get(ctx, key, owner)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err == nil && owner.GetUID() == ref.UID {
			continue
		}
		uid := o.GetUID()
		return client.IgnoreNotFound(gc.c.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground),
			client.Preconditions{UID: &uid}))
	}
	return nil
}
