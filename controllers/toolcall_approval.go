package controllers

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

// awaitApproval decides a parked call: the ToolCallApproval named after it, checked
// against the arguments digest, the requester (no self-approval) and the window. Waiting
// costs nothing: the approval's watch or RequeueAfter at the deadline wakes the call.
func (r *ToolCallReconciler) awaitApproval(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	approval := &v1alpha1.ToolCallApproval{}
	var answer *pipeline.Approval
	err := r.Get(ctx, types.NamespacedName{Namespace: call.Namespace, Name: call.Name}, approval)
	switch {
	case err == nil:
		answer = &pipeline.Approval{
			Decision:   pipeline.ApprovalDecision(approval.Spec.Decision),
			ArgsDigest: approval.Spec.ArgumentsDigest,
			Approver:   approval.Spec.Approver,
			Reason:     approval.Spec.Reason,
			CreatedAt:  approval.CreationTimestamp.Time,
		}
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	parked := pipeline.Parked{ArgsDigest: call.Status.ArgumentsDigest, Requester: call.Spec.Requester}
	if call.Status.AdmittedTime != nil && call.Status.ApprovalDeadline != nil {
		parked.ParkedAt = call.Status.AdmittedTime.Time
		parked.Window = call.Status.ApprovalDeadline.Sub(parked.ParkedAt)
	}
	decision, wait := pipeline.DecideApproval(parked, answer, r.Clock.Now())
	if decision.Verdict == pipeline.Ask {
		// Still waiting; an answer that does not count (self-approval) is marked refused so
		// that its author learns why, and the call keeps waiting for a rightful approver.
		if answer != nil {
			r.markConsumed(ctx, approval, decision)
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	r.setStage(call, v1alpha1.ConditionAdmitted, decision, v1alpha1.ReasonApproved)
	var events []event
	if decision.Verdict == pipeline.Deny {
		events = r.refuse(call, decision, r.Clock.Now()).events
	} else {
		call.Status.Verdict = v1alpha1.VerdictAllow
		if err := r.scheduleOrQueue(ctx, call); err != nil {
			return ctrl.Result{}, err
		}
		events = []event{callAdmitted(call)}
	}
	if err := r.writeStatus(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	r.afterStatusWrite(call, events)
	if answer != nil {
		r.markConsumed(ctx, approval, decision)
	}
	if call.Status.Phase == v1alpha1.PhaseRunning {
		return r.createJob(ctx, call)
	}
	return ctrl.Result{}, nil
}

// markConsumed tells the approver what became of their answer (best effort: the call's
// status is the record).
func (r *ToolCallReconciler) markConsumed(ctx context.Context, approval *v1alpha1.ToolCallApproval, d pipeline.Decision) {
	// True: the answer decided the call (approved, or denied as asked); False: it was refused.
	status, reason := metav1.ConditionFalse, string(d.Reason)
	switch {
	case d.Verdict == pipeline.Allow || d.Reason == pipeline.ReasonApprovalDenied:
		status, reason = metav1.ConditionTrue, v1alpha1.ReasonApplied
	case d.Reason == pipeline.ReasonApprovalDigestMismatch:
		reason = v1alpha1.ReasonDigestMismatch
	}
	changed := setStatusCondition(&approval.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionConsumed, Status: status, Reason: reason, Message: d.Message,
		ObservedGeneration: approval.Generation, LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	})
	if !changed {
		return
	}
	approval.Status.ObservedGeneration = approval.Generation
	if err := r.Status().Update(ctx, approval); err != nil && !apierrors.IsConflict(err) {
		ctrl.LoggerFrom(ctx).Error(err, "could not mark the approval consumed", "approval", approval.Name)
	}
}
