package toolcall

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/pipeline"
)

// scheduleOrQueue sets an admitted call Running with its first attempt when its session's
// barriers let it start now, else Queued. In memory only: the caller writes the status.
func (r *Reconciler) scheduleOrQueue(ctx context.Context, call *v1alpha1.ToolCall) error {
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
	r.startAttempt(ctx, call, int32(len(call.Status.Attempts))+1)
	return nil
}

// startAttempt records a new attempt and the executor that runs it (in memory but for what
// the executor's claim does; the caller writes the status, then calls execute).
func (r *Reconciler) startAttempt(ctx context.Context, call *v1alpha1.ToolCall, attempt int32) {
	now := ptrTime(r.Clock.Now())
	call.Status.Phase = v1alpha1.PhaseRunning
	call.Status.Attempts = append(call.Status.Attempts, v1alpha1.Attempt{Attempt: attempt, StartTime: now})
	if call.Status.StartTime == nil {
		call.Status.StartTime = now
	}
	r.chooseExecutor(ctx, call)
}

// startWhenRunnable starts a queued call once its session lets it.
func (r *Reconciler) startWhenRunnable(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	if err := r.scheduleOrQueue(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	if call.Status.Phase != v1alpha1.PhaseRunning {
		return ctrl.Result{}, nil
	}
	if err := r.status.writeStatus(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	return r.execute(ctx, call)
}

// runnable applies the session's concurrency rule: the calls of a session
// (executor.SessionKey: scope, spec.session, requester) in the order they were issued
// (orderOfIssue); an unsafe call is a barrier. Calls not yet admitted count as barriers
// (their tool is not known yet), so a later call never overtakes them; they are the same
// requester's own calls, so no one else's call can hold a session back.
func (r *Reconciler) runnable(ctx context.Context, call *v1alpha1.ToolCall) (bool, error) {
	if call.Spec.Session == "" {
		return true, nil
	}
	peers := &v1alpha1.ToolCallList{}
	if err := r.List(ctx, peers, client.InNamespace(call.Namespace), client.MatchingFields{executor.IndexSessionKey: executor.SessionKey(call)}); err != nil {
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
	orderOfIssue(items, r.issued.of)
	calls := make([]pipeline.SessionCall, 0, len(items))
	for i := range items {
		st := items[i].Status
		safe := st.Tool != nil && r.features().SessionSafe(st.Tool.Spec) &&
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
