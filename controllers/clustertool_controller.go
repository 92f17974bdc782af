package controllers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// ClusterToolReconciler registers ClusterTools, the global layer.
type ClusterToolReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
	Compiler *pipeline.Compiler
}

// Reconcile registers one ClusterTool.
func (r *ClusterToolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tool := &v1alpha1.ClusterTool{}
	if err := r.Get(ctx, req.NamespacedName, tool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	peers := &v1alpha1.ClusterToolList{}
	if err := r.List(ctx, peers); err != nil {
		return ctrl.Result{}, err
	}
	var regs []pipeline.Registration
	for i := range peers.Items {
		if peers.Items[i].DeletionTimestamp.IsZero() {
			regs = append(regs, catalog.ClusterToolRegistration(&peers.Items[i]))
		}
	}
	cond := specCondition(r.Compiler, &tool.Spec)
	if winner := duplicateOf(pipeline.NewIndex(regs, nil, nil), catalog.ClusterToolRegistration(tool).Key); winner != "" {
		cond = duplicateCondition(winner)
	}
	status := registeredStatus(&tool.Spec, tool.Name, tool.Generation, tool.Status.Conditions, cond)
	return ctrl.Result{}, writeToolStatus(ctx, r.Client, r.Recorder, tool, &tool.Status, status)
}

// SetupWithManager watches ClusterTools and re-registers namesakes on any change.
func (r *ClusterToolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ClusterTool{}).
		Watches(&v1alpha1.ClusterTool{}, handler.EnqueueRequestsFromMapFunc(r.namesakes)).
		Named("clustertool").
		Complete(r)
}

func (r *ClusterToolReconciler) namesakes(ctx context.Context, o client.Object) []reconcile.Request {
	t, ok := o.(*v1alpha1.ClusterTool)
	if !ok {
		return nil
	}
	tools := &v1alpha1.ClusterToolList{}
	if err := r.List(ctx, tools); err != nil {
		return nil
	}
	name := catalog.ToolName(&t.Spec, t.Name)
	var reqs []reconcile.Request
	for i := range tools.Items {
		if catalog.ToolName(&tools.Items[i].Spec, tools.Items[i].Name) == name {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&tools.Items[i])})
		}
	}
	return reqs
}
