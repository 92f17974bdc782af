package controllers

import (
	"context"
	"fmt"
	"sort"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/tracing"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
)

// scheduleOrQueue sets an admitted call Running with its first attempt when its session's
// barriers let it start now, else Queued. In memory only: the caller writes the status.
func (r *ToolCallReconciler) scheduleOrQueue(ctx context.Context, call *v1alpha1.ToolCall) error {
	runnable, err := r.runnable(ctx, call)
	if err != nil {
		return err
	}
	if !runnable {
		call.Status.Phase = v1alpha1.PhaseQueued
		r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionUnknown, v1alpha1.ReasonQueued,
			"waiting for earlier calls of session "+call.Spec.Session)
		return nil
	}
	r.startAttempt(call, int32(len(call.Status.Attempts))+1)
	r.claimWarm(ctx, call)
	return nil
}

// startAttempt records a new attempt and its deterministic Job name (in memory).
func (r *ToolCallReconciler) startAttempt(call *v1alpha1.ToolCall, attempt int32) {
	now := ptrTime(r.Clock.Now())
	name := JobName(call.Name, attempt)
	call.Status.Phase = v1alpha1.PhaseRunning
	call.Status.Job = &v1alpha1.JobReference{Name: name}
	call.Status.Attempts = append(call.Status.Attempts, v1alpha1.Attempt{Attempt: attempt, JobName: name, StartTime: now})
	if call.Status.StartTime == nil {
		call.Status.StartTime = now
	}
	r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionUnknown, v1alpha1.ReasonRunning,
		fmt.Sprintf("attempt %d runs in Job %s", attempt, name))
}

// startWhenRunnable starts a queued call once its session lets it.
func (r *ToolCallReconciler) startWhenRunnable(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	if err := r.scheduleOrQueue(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	if call.Status.Phase != v1alpha1.PhaseRunning {
		return ctrl.Result{}, nil
	}
	if err := r.writeStatus(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	return r.createJob(ctx, call)
}

// runnable applies the session's concurrency rule: calls of a session in creation order;
// an unsafe call is a barrier. Calls not yet admitted count as barriers (their tool is not
// known yet), so a later call never overtakes them.
func (r *ToolCallReconciler) runnable(ctx context.Context, call *v1alpha1.ToolCall) (bool, error) {
	if call.Spec.Session == "" {
		return true, nil
	}
	peers := &v1alpha1.ToolCallList{}
	if err := r.List(ctx, peers, client.InNamespace(call.Namespace), client.MatchingFields{indexSession: call.Spec.Session}); err != nil {
		return false, err
	}
	items := peers.Items
	found := false
	for i := range items {
		if items[i].Name == call.Name {
			items[i] = *call // the in-memory state is newer than the cache's
			found = true
		}
	}
	if !found {
		items = append(items, *call)
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i].CreationTimestamp, items[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return items[i].Name < items[j].Name
	})
	calls := make([]pipeline.SessionCall, 0, len(items))
	for i := range items {
		st := items[i].Status
		safe := st.Tool != nil && st.Tool.Spec != nil && st.Tool.Spec.ConcurrencySafe &&
			st.Phase != v1alpha1.PhasePending && st.Phase != ""
		calls = append(calls, pipeline.SessionCall{Key: items[i].Name, ConcurrencySafe: safe, Done: st.Phase.IsTerminal()})
	}
	for _, key := range pipeline.Runnable(calls) {
		if key == call.Name {
			return true, nil
		}
	}
	return false, nil
}

// createJob creates the current attempt's Job, or adopts it when it already exists (a
// restart between the status write and the create): one Job per attempt, whatever happens.
func (r *ToolCallReconciler) createJob(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	if warmAttempt(call) != nil {
		return r.startWarm(ctx, call)
	}
	attempt := currentAttempt(call)
	frozen, err := r.refreeze(call)
	if err != nil {
		return r.finishInternal(ctx, call, "the frozen arguments could not be reproduced")
	}
	if !r.Clock.Now().Before(r.attemptDeadline(call)) {
		return r.createTooLate(ctx, call, attempt)
	}
	key, err := frame.NewKey()
	if err != nil {
		return ctrl.Result{}, err
	}
	job := BuildJob(JobInput{Call: call, Tool: call.Status.Tool.Spec, Arguments: frozen.Canonical(),
		Digest: frozen.Digest(), Attempt: attempt, FrameKey: key,
		Traceparent: tracing.ExecutionTraceparent(ctx, int(attempt))}, r.Options.Job)
	if err := controllerutil.SetControllerReference(call, job, r.Scheme); err != nil {
		return ctrl.Result{}, err
	}
	if why, err := r.ensureIsolation(ctx, call, job.Spec.Template.Labels); err != nil || why != "" {
		if err != nil {
			return ctrl.Result{}, err
		}
		return r.refuseUnisolated(ctx, call, why)
	}
	start := r.Clock.Now()
	err = r.Create(ctx, job)
	metrics.StageDuration.WithLabelValues("job_create").Observe(r.Clock.Since(start).Seconds())
	switch {
	case err == nil:
		r.refusals.forget(client.ObjectKeyFromObject(call))
		metrics.JobsCreated.WithLabelValues(metricTool(call)).Inc()
		ctrl.LoggerFrom(ctx).Info("created Job", "job", job.Name, "attempt", attempt)
	case apierrors.IsAlreadyExists(err):
		existing := &batchv1.Job{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), existing); err != nil {
			return ctrl.Result{}, err
		}
		r.refusals.forget(client.ObjectKeyFromObject(call))
		if !metav1.IsControlledBy(existing, call) {
			return r.finishInternal(ctx, call, "a Job named "+job.Name+" exists and belongs to something else")
		}
	default:
		return r.createRefused(ctx, call, job.Name, err)
	}
	return ctrl.Result{RequeueAfter: r.attemptDeadline(call).Sub(r.Clock.Now())}, nil
}

func currentAttempt(call *v1alpha1.ToolCall) int32 {
	if n := len(call.Status.Attempts); n > 0 {
		return call.Status.Attempts[n-1].Attempt
	}
	return 1
}
