package toolcall

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/internal/bounds"
	"github.com/toolgate/toolgate/pipeline"
)

// awaitApproval decides a parked call: the ToolCallApproval named after it, checked
// against the call's uid, the time it was parked, the arguments digest, the requester (no
// self-approval) and the window. Waiting costs nothing: the approval's watch or
// RequeueAfter at the deadline wakes the call.
func (ad *admitter) awaitApproval(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	r := ad.r
	approval := &v1alpha1.ToolCallApproval{}
	var answer *pipeline.Approval
	err := r.Get(ctx, types.NamespacedName{Namespace: call.Namespace, Name: call.Name}, approval)
	switch {
	case err == nil:
		answer = &pipeline.Approval{
			CallUID:    approval.Spec.CallUID,
			Decision:   pipeline.ApprovalDecision(approval.Spec.Decision),
			ArgsDigest: approval.Spec.ArgumentsDigest,
			Approver:   approval.Spec.Approver,
			Reason:     approval.Spec.Reason,
			CreatedAt:  approval.CreationTimestamp.Time,
			ConsumedBy: approval.Status.ConsumedBy,
		}
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	parked := parkedOf(call)
	decision, wait := pipeline.DecideApproval(parked, answer, r.Clock.Now())
	if answer != nil {
		if refused, ignored := pipeline.IgnoredApproval(parked, answer); ignored {
			// An answer that does not count (another call's, a stale one, a self-approval)
			// is marked refused so that its author learns why; the call keeps waiting for a
			// rightful answer, or times out.
			if err := ad.markConsumed(ctx, approval, call, refused); err != nil && !apierrors.IsConflict(err) {
				ctrl.LoggerFrom(ctx).Error(err, "could not mark the approval refused", "approval", approval.Name)
			}
		} else if err := ad.markConsumed(ctx, approval, call, decision); err != nil {
			// The answer is marked consumed by this call before the call moves on: a crash
			// or a conflict between the two writes leaves it consumed by this call only,
			// never free to answer another. Failing to mark it (it changed, or was
			// withdrawn) retries.
			return ctrl.Result{}, err
		}
	}
	if decision.Verdict == pipeline.Ask {
		r.notices.notifyRequested(ctx, call)
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	ad.setStage(call, v1alpha1.ConditionAdmitted, decision, v1alpha1.ReasonApproved)
	if c := meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionGuarded); c != nil && c.Status == metav1.ConditionUnknown {
		// The guards passed the ask on: the answer settles their stage too.
		ad.setStage(call, v1alpha1.ConditionGuarded, decision, v1alpha1.ReasonApproved)
	}
	traceApproval(ctx, call, decision, r.Clock.Now())
	if answer != nil && decidedBy(decision) {
		call.Status.Approver = answer.Approver
	}
	var events []event
	if decision.Verdict == pipeline.Deny {
		events = ad.refuse(call, decision, r.Clock.Now()).events
	} else {
		call.Status.Verdict = v1alpha1.VerdictAllow
		if err := r.scheduleOrQueue(ctx, call); err != nil {
			return ctrl.Result{}, err
		}
		events = []event{callAdmitted(call)}
	}
	if err := r.status.writeStatus(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	r.status.afterStatusWrite(call, events)
	r.notices.notifyDecided(ctx, call)
	if call.Status.Phase == v1alpha1.PhaseRunning {
		return r.execute(ctx, call)
	}
	return ctrl.Result{}, nil
}

// parkedOf describes the parked call for DecideApproval.
func parkedOf(call *v1alpha1.ToolCall) pipeline.Parked {
	parked := pipeline.Parked{
		CallUID:       string(call.UID),
		ArgsDigest:    call.Status.ArgumentsDigest,
		Requester:     call.Spec.Requester,
		CallCreatedAt: call.CreationTimestamp.Time,
	}
	if call.Status.AdmittedTime != nil && call.Status.ApprovalDeadline != nil {
		parked.ParkedAt = call.Status.AdmittedTime.Time
		parked.Window = call.Status.ApprovalDeadline.Sub(parked.ParkedAt)
	}
	return parked
}

// markConsumed tells the approver what became of their answer: Consumed=True (Applied)
// when it decided the call as asked, False with the reason when it was refused. An answer
// that decided the call records the call's uid in status.consumedBy.
func (ad *admitter) markConsumed(ctx context.Context, approval *v1alpha1.ToolCallApproval, call *v1alpha1.ToolCall, d pipeline.Decision) error {
	r := ad.r
	status, reason := metav1.ConditionFalse, string(d.Reason)
	decided := false
	switch {
	case d.Verdict == pipeline.Allow || d.Reason == pipeline.ReasonApprovalDenied:
		status, reason, decided = metav1.ConditionTrue, v1alpha1.ReasonApplied, true
	case d.Reason == pipeline.ReasonApprovalDigestMismatch:
		reason, decided = v1alpha1.ReasonDigestMismatch, true
	}
	changed := bounds.SetStatusCondition(&approval.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionConsumed, Status: status, Reason: reason, Message: approvalMessage(call, d),
		ObservedGeneration: approval.Generation, LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	})
	if decided && approval.Status.ConsumedBy != string(call.UID) {
		approval.Status.ConsumedBy, changed = string(call.UID), true
	}
	if !changed {
		return nil
	}
	approval.Status.ObservedGeneration = approval.Generation
	return r.Status().Update(ctx, approval)
}

// approvalMessage is the Consumed condition's message: the decision's, and for an
// approval that does not count what the approver can do.
func approvalMessage(call *v1alpha1.ToolCall, d pipeline.Decision) string {
	if d.Verdict == pipeline.Ask {
		return fmt.Sprintf("%s (delete this approval to answer call %s, uid %s, again)", d.Message, call.Name, call.UID)
	}
	return d.Message
}

// decidedBy reports whether the decision is the approval's own (approved, denied, or
// refused for its digest), not the window's.
func decidedBy(d pipeline.Decision) bool {
	return d.Verdict == pipeline.Allow || d.Reason == pipeline.ReasonApprovalDenied || d.Reason == pipeline.ReasonApprovalDigestMismatch
}
