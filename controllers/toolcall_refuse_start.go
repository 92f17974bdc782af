package controllers

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

// refuseStart ends a call whose attempt an executor could not start for a reason of its
// own (a workspace the call cannot have): Executed=False with the reason and the detail
// for people, the attempt ended, and an isError result with the refusal's model-facing
// message (never the detail: it may name host configuration).
func (r *ToolCallReconciler) refuseStart(ctx context.Context, call *v1alpha1.ToolCall, f startRefusal) (ctrl.Result, error) {
	ctrl.LoggerFrom(ctx).Info("refusing a call: its attempt could not start", "reason", f.reason, "detail", f.detail)
	r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionFalse, f.reason, f.detail)
	if a := current(call); a != nil && a.CompletionTime == nil {
		a.CompletionTime = ptrTime(r.Clock.Now())
		a.Reason = f.reason
	}
	r.setTerminal(call, v1alpha1.PhaseFailed, pipeline.Result{IsError: true,
		Reason: pipeline.Reason(f.reason), Error: f.message, Content: f.message}, r.Clock.Now())
	return ctrl.Result{}, r.writeTerminal(ctx, call)
}
