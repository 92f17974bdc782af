package controllers

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// cancelRequested reports whether a call that has not ended was asked to stop
// (spec.cancel). A terminal call is never cancelled: its frozen result stays.
func cancelRequested(call *v1alpha1.ToolCall) bool {
	return call.Spec.Cancel && !call.Status.Phase.IsTerminal()
}

// cancel ends a call whose spec.cancel is set, whatever phase it is in (pending, parked for
// approval, queued behind its session, running): a running attempt's Job is deleted with
// foreground propagation (its Pod goes first, so the body is stopped now, not after the
// Job), then the call gets its terminal isError result, reason Cancelled, through the one
// terminal path. Deleting before writing is safe: spec.cancel cannot be unset, so a pass
// that crashed or lost a race between the two comes back here, never to observe (which
// would read the deleting Job as JobDeleted). The Job's JobFinalizer is released by
// tidyJobs once the call is terminal.
func (r *ToolCallReconciler) cancel(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	stage, msg := pipeline.CancelledBeforeRunning, "cancelled (spec.cancel) before the body ran"
	if a := warmAttempt(call); call.Status.Phase == v1alpha1.PhaseRunning && a != nil && a.PodName != "" {
		stage = pipeline.CancelledWhileRunning
		if err := r.stopCancelledWarmPod(ctx, call, a.PodName); err != nil {
			return ctrl.Result{}, err
		}
		if a.CompletionTime == nil {
			a.CompletionTime = ptrTime(r.Clock.Now())
		}
		a.Reason = v1alpha1.ReasonCancelled
		msg = fmt.Sprintf("cancelled (spec.cancel) while attempt %d ran; warm Pod %s deleted", a.Attempt, a.PodName)
	} else if call.Status.Phase == v1alpha1.PhaseRunning && call.Status.Job != nil {
		stage = pipeline.CancelledWhileRunning
		if err := r.stopCancelledJob(ctx, call.Namespace, call.Status.Job.Name); err != nil {
			return ctrl.Result{}, err
		}
		now := ptrTime(r.Clock.Now())
		if n := len(call.Status.Attempts) - 1; n >= 0 {
			if call.Status.Attempts[n].CompletionTime == nil {
				call.Status.Attempts[n].CompletionTime = now
			}
			call.Status.Attempts[n].Reason = v1alpha1.ReasonCancelled
		}
		msg = fmt.Sprintf("cancelled (spec.cancel) while attempt %d ran; Job %s deleted", currentAttempt(call), call.Status.Job.Name)
	}
	parked := call.Status.Phase == v1alpha1.PhaseAwaitingApproval
	r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionFalse, v1alpha1.ReasonCancelled, msg)
	r.setTerminal(call, v1alpha1.PhaseFailed, pipeline.Cancelled(stage, int(currentAttempt(call))), r.Clock.Now())
	if err := r.writeTerminal(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	if parked { // the people asked to decide learn that nobody needs to: a Denied event, reason Cancelled
		r.notifyDecided(ctx, call)
	}
	return ctrl.Result{}, nil
}

// stopCancelledJob deletes the running attempt's Job, foreground: the garbage collector
// deletes its Pod before the Job. A Job that is absent (never created) or already being
// deleted needs nothing. The cache may not hold a Job created a moment ago (a call
// cancelled right after it started): absent there, the Job is read from the API server.
func (r *ToolCallReconciler) stopCancelledJob(ctx context.Context, namespace, name string) error {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	job := &batchv1.Job{}
	err := r.Get(ctx, key, job)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, job)
	}
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	if !job.DeletionTimestamp.IsZero() {
		return nil
	}
	err = r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationForeground),
		client.Preconditions{UID: &job.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("deleted the Job of a cancelled call", "job", job.Name)
	return nil
}

// stopCancelledWarmPod deletes the warm Pod a cancelled call's running attempt claimed (the
// body stops now; the Pod is never used again) and forgets its handover. A Pod already gone
// needs nothing; one the cache has not seen yet is read from the API server.
func (r *ToolCallReconciler) stopCancelledWarmPod(ctx context.Context, call *v1alpha1.ToolCall, name string) error {
	r.warm.forget(call.UID)
	key := types.NamespacedName{Namespace: call.Namespace, Name: name}
	pod := &corev1.Pod{}
	err := r.Get(ctx, key, pod)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, pod)
	}
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	if pod.Annotations[podcontract.AnnotationClaimedBy] != string(call.UID) || !pod.DeletionTimestamp.IsZero() {
		return nil // not this call's (never claimed it), or already going
	}
	r.deleteWarmPod(ctx, pod)
	ctrl.LoggerFrom(ctx).Info("deleted the warm Pod of a cancelled call", "pod", pod.Name)
	return nil
}
