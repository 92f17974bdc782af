package registration

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/internal/bounds"
	"github.com/toolgate/toolgate/controllers/internal/events"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// ToolPolicyReconciler compiles a policy's CEL rules and reports Ready. A policy that does
// not compile still takes part in calls — and denies them (fail closed).
type ToolPolicyReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
	Compiler *pipeline.Compiler
}

// Reconcile compiles one policy.
func (r *ToolPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	policy := &v1alpha1.ToolPolicy{}
	if err := r.Get(ctx, req.NamespacedName, policy); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonReady, Message: "every rule compiles", ObservedGeneration: policy.Generation}
	if err := r.Compiler.CompilePolicy(catalog.PolicySpec(policy)).Err(); err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonPolicyCompileError
		cond.Message = err.Error() + " (calls this policy applies to are denied until it is fixed)"
	}
	desired := policy.Status.DeepCopy()
	desired.ObservedGeneration = policy.Generation
	bounds.SetStatusCondition(&desired.Conditions, cond)
	if desired.ObservedGeneration == policy.Status.ObservedGeneration && conditionsEqual(desired.Conditions, policy.Status.Conditions) {
		return ctrl.Result{}, nil
	}
	policy.Status = *desired
	if err := r.Status().Update(ctx, policy); err != nil {
		return ctrl.Result{}, ignoreConflictOrGone(err)
	}
	if cond.Status == metav1.ConditionFalse {
		events.Emit(r.Recorder, policy, corev1.EventTypeWarning, cond.Reason, "Compile", cond.Message)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches ToolPolicies.
func (r *ToolPolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.ToolPolicy{}).Named("toolpolicy").Complete(r)
}
