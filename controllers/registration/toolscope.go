package registration

import (
	"context"
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/internal/bounds"
	"github.com/toolgate/toolgate/controllers/internal/events"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// ToolScopeReconciler checks a scope's parent chain: every parent exists, no cycle.
type ToolScopeReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
}

// +kubebuilder:rbac:groups=toolgate.dev,resources=toolscopes;toolpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=toolgate.dev,resources=toolscopes/status;toolpolicies/status,verbs=get;update;patch

// Reconcile resolves one scope's chain and sets Ready.
func (r *ToolScopeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	scope := &v1alpha1.ToolScope{}
	if err := r.Get(ctx, req.NamespacedName, scope); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	scopes := &v1alpha1.ToolScopeList{}
	if err := r.List(ctx, scopes, client.InNamespace(scope.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	list := make([]pipeline.Scope, 0, len(scopes.Items))
	for i := range scopes.Items {
		list = append(list, catalog.ScopeOf(&scopes.Items[i]))
	}
	chain, cond := scopeChain(pipeline.NewIndex(nil, nil, list), scope.Name)
	cond.ObservedGeneration = scope.Generation
	desired := scope.Status.DeepCopy()
	desired.ObservedGeneration = scope.Generation
	desired.Chain = chain
	bounds.SetStatusCondition(&desired.Conditions, cond)
	if desired.ObservedGeneration == scope.Status.ObservedGeneration && slices.Equal(desired.Chain, scope.Status.Chain) &&
		conditionsEqual(desired.Conditions, scope.Status.Conditions) {
		return ctrl.Result{}, nil
	}
	scope.Status = *desired
	if err := r.Status().Update(ctx, scope); err != nil {
		return ctrl.Result{}, ignoreConflictOrGone(err)
	}
	if cond.Status == metav1.ConditionFalse {
		events.Emit(r.Recorder, scope, corev1.EventTypeWarning, cond.Reason, "Resolve", cond.Message)
	}
	return ctrl.Result{}, nil
}

// scopeChain is the scope's chain (the scope first) as the pipeline resolves it, and the
// Ready condition that says whether it resolves.
func scopeChain(idx *pipeline.Index, name string) ([]string, metav1.Condition) {
	chain, err := idx.Chain(name)
	if err != nil {
		reason := v1alpha1.ReasonUnknownParent
		var re *pipeline.ResolveError
		if errors.As(err, &re) {
			reason = string(re.Reason)
		}
		return chain, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: reason, Message: err.Error()}
	}
	return chain, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonReady, Message: "the scope's chain resolves"}
}

// SetupWithManager watches scopes; any scope change re-checks every scope of the namespace
// (chains are short and scopes few; a parent's appearance or loop affects all descendants).
func (r *ToolScopeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ToolScope{}).
		Watches(&v1alpha1.ToolScope{}, handler.EnqueueRequestsFromMapFunc(r.namespaceScopes)).
		Named("toolscope").
		Complete(r)
}

func (r *ToolScopeReconciler) namespaceScopes(ctx context.Context, o client.Object) []reconcile.Request {
	scopes := &v1alpha1.ToolScopeList{}
	if err := r.List(ctx, scopes, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(scopes.Items))
	for i := range scopes.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&scopes.Items[i])})
	}
	return reqs
}
