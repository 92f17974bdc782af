package toolcall

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/pipeline"
)

// cancelRequested reports whether a call that has not ended was asked to stop
// (spec.cancel). A terminal call is never cancelled: its frozen result stays.
func cancelRequested(call *v1alpha1.ToolCall) bool {
	return call.Spec.Cancel && !call.Status.Phase.IsTerminal()
}

// cancel ends a call whose spec.cancel is set, whatever phase it is in (pending, parked for
// approval, queued behind its session, running): a running attempt is stopped by its
// executor (a Job is deleted with foreground propagation; a claimed warm Pod is deleted),
// and once every Pod of the attempt has stopped (toolcall_stopping.go) — not before: a body
// may run on for its grace period — the call gets its terminal isError result, reason
// Cancelled, through the one terminal path. Until then it stays Running (Executed=Unknown,
// Stopping), its session's barrier. Deleting before writing is safe: spec.cancel cannot be
// unset, so a pass that crashed or lost a race between the two comes back here, never to
// observe (which would read the deleting Job as JobDeleted). The Job's podspec.JobFinalizer is
// released by the Job executor's tidy once the call is terminal.
func (r *Reconciler) cancel(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	return r.endEarly(ctx, call, earlyEnd{reason: v1alpha1.ReasonCancelled, cause: "cancelled (spec.cancel)", result: pipeline.Cancelled})
}

// earlyEnd is why a call ends before its outcome: cancelled or deleted.
type earlyEnd struct {
	reason string
	cause  string
	result func(stage string, attempt int) pipeline.Result
}

// endEarly stops the running attempt, if any, through its executor and, once nothing of it
// runs any more, ends the call with e's result through the one terminal path (the call
// stays unfinished while it waits: check its phase); the people asked to approve a parked
// call learn that nobody needs to (a Denied event).
func (r *Reconciler) endEarly(ctx context.Context, call *v1alpha1.ToolCall, e earlyEnd) (ctrl.Result, error) {
	stage, msg := pipeline.CancelledBeforeRunning, e.cause+" before the body ran"
	var overdue []*corev1.Pod
	if a := executor.Current(call); call.Status.Phase == v1alpha1.PhaseRunning && a != nil {
		stopped, err := r.executorFor(a).Stop(ctx, call)
		if err != nil {
			return ctrl.Result{}, err
		}
		if stopped != "" {
			msg = fmt.Sprintf("%s while attempt %d ran; %s", e.cause, a.Attempt, stopped)
			st, err := r.stopper.stopAttemptPods(ctx, call, a)
			if err != nil {
				return ctrl.Result{}, err
			}
			if st.waiting() {
				return r.stopper.awaitStopped(ctx, call, st, msg)
			}
			stage, overdue = pipeline.CancelledWhileRunning, st.overdue
			confirmed := "every Pod of the attempt has stopped"
			if len(overdue) > 0 {
				stage, confirmed = pipeline.CancelledWhileRunningUnconfirmed, st.unconfirmed(r.Options.DeadlineGrace)
			}
			msg += "; " + confirmed
			if a.CompletionTime == nil {
				a.CompletionTime = ptrTime(r.Clock.Now())
				r.features().AfterEnd(ctx, call, len(call.Status.Attempts)-1)
			}
			a.Reason = e.reason
		}
	}
	parked := call.Status.Phase == v1alpha1.PhaseAwaitingApproval
	r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionFalse, e.reason, msg)
	r.status.setTerminal(call, v1alpha1.PhaseFailed, e.result(stage, int(executor.CurrentAttempt(call))), r.Clock.Now())
	if err := r.status.writeTerminal(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	r.stopper.forceDelete(ctx, overdue)
	if parked {
		r.notices.notifyDecided(ctx, call)
	}
	return ctrl.Result{}, nil
}
