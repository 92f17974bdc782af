package controllers

import (
	"context"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/pipeline"
)

// endRefused is the one path of every call whose attempt could not start (isolation
// missing, a workspace the call cannot have, a Job the API server refused, an internal
// error): Executed=False with the refusal's reason and its detail for people, the open
// attempt ended, an isError result with the model-facing message (never the detail: it may
// name host configuration) and meta, the status written, then the refusal's event.
func (r *ToolCallReconciler) endRefused(ctx context.Context, call *v1alpha1.ToolCall, f executor.Refusal) (ctrl.Result, error) {
	ctrl.LoggerFrom(ctx).Info("refusing a call: its attempt could not start", "reason", f.Reason, "detail", f.Detail)
	now := r.Clock.Now()
	r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionFalse, f.Reason, f.Detail)
	if a := executor.Current(call); a != nil && a.CompletionTime == nil {
		a.CompletionTime = ptrTime(now)
		a.Reason = f.Reason
	}
	r.setTerminal(call, v1alpha1.PhaseFailed, pipeline.Result{IsError: true, Reason: pipeline.Reason(f.Reason),
		Error: f.Message, Content: f.Message, Meta: maps.Clone(f.Meta)}, now)
	if err := r.writeTerminal(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	if f.Event != nil {
		r.afterStatusWrite(call, []event{*f.Event})
	}
	return ctrl.Result{}, nil
}
