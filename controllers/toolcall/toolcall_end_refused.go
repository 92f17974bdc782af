package toolcall

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
func (r *Reconciler) endRefused(ctx context.Context, call *v1alpha1.ToolCall, f executor.Refusal) (ctrl.Result, error) {
	ctrl.LoggerFrom(ctx).Info("refusing a call: its attempt could not start", "reason", f.Reason, "detail", f.Detail)
	now := r.Clock.Now()
	r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionFalse, f.Reason, f.Detail)
	if a := executor.Current(call); a != nil && a.CompletionTime == nil {
		a.CompletionTime = ptrTime(now)
		a.Reason = f.Reason
	}
	r.status.setTerminal(call, v1alpha1.PhaseFailed, pipeline.Result{IsError: true, Reason: pipeline.Reason(f.Reason),
		Error: f.Message, Content: f.Message, Meta: maps.Clone(f.Meta)}, now)
	if err := r.status.writeTerminal(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	if f.Event != nil {
		r.status.afterStatusWrite(call, []event{*f.Event})
	}
	return ctrl.Result{}, nil
}

// finishInternal ends a call that cannot continue; it never stays without a result.
func (r *Reconciler) finishInternal(ctx context.Context, call *v1alpha1.ToolCall, msg string) (ctrl.Result, error) {
	return r.endRefused(ctx, call, *executor.Internal(msg).Refused)
}

// refusal is the model-facing result of a call refused before running. Policy internals
// (policy and rule names, CEL errors) stay in the conditions; the model sees the rule's own
// message or a generic sentence.
func refusal(d pipeline.Decision) pipeline.Result {
	msg := d.Message
	if d.Feedback != "" {
		msg = d.Feedback // Message names host configuration (DESIGN rule 4)
	}
	switch d.Reason {
	case pipeline.ReasonPolicyDenied, pipeline.ReasonGuardDenied:
		if msg == "" {
			msg = "the call was denied by policy"
		}
	case pipeline.ReasonPolicyError:
		msg = "the call was denied: a policy could not be evaluated"
	case pipeline.ReasonNotASubject:
		msg = "the requester may not make calls in this scope"
	}
	return pipeline.Result{IsError: true, Reason: d.Reason, Error: msg, Content: msg}
}
