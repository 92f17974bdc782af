package toolcall

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// Reasons of the operator's own, declared in the API with every other reason.
const (
	ReasonOperatorError = v1alpha1.ReasonOperatorError
)

// finishAttempt normalises an attempt's outcome, then either starts the next attempt (retry
// policy) or runs post-execute and freezes the result: one status write either way (two
// when the PostExecute policies cannot be read at first, see policiesUnavailable). An
// outcome the runner did not vouch for (a body killed, lost, its Job or Pod deleted under
// it) is recorded only once the attempt's Pods have stopped (toolcall_stopping.go).
func (r *Reconciler) finishAttempt(ctx context.Context, call *v1alpha1.ToolCall, o pipeline.Outcome) (ctrl.Result, error) {
	var overdue []*corev1.Pod
	if o.Report == nil {
		st, err := r.stopper.stopAttemptPods(ctx, call, executor.Current(call))
		if err != nil {
			return ctrl.Result{}, err
		}
		if st.waiting() {
			r.decided.keep(ctx, call, o)
			return r.stopper.awaitStopped(ctx, call, st, fmt.Sprintf("attempt %d ended without the runner's account", executor.CurrentAttempt(call)))
		}
		if overdue = st.overdue; len(overdue) > 0 {
			o.Detail = strings.TrimPrefix(o.Detail+"; "+st.unconfirmed(r.Options.DeadlineGrace), "; ")
		}
	}
	start := r.Clock.Now()
	spec := call.Status.Tool.Spec
	res := pipeline.Normalize(o, pipeline.NormalizeOptions{MaxOutputBytes: int(podspec.MaxOutput(spec))})
	n := len(call.Status.Attempts) - 1
	if call.Status.Attempts[n].CompletionTime == nil {
		// Kept across passes: the post-execute deadline counts from the first time the end
		// was seen.
		call.Status.Attempts[n].CompletionTime = ptrTime(start)
		r.features().AfterEnd(ctx, call, n)
		traceAttempt(ctx, call, n, res, start, r.Clock.Now())
	}
	if res.IsError {
		call.Status.Attempts[n].Reason = string(res.Reason)
	}
	// The attempt is released (its Job stopped, its warm Pod deleted) only once the outcome is
	// written: stopped first, a write that lost a race would be retried against a deleting
	// Job and record JobDeleted instead.
	ended, exec := call.Status.Attempts[n], r.executorFor(&call.Status.Attempts[n])
	if retry := pipeline.DecideRetry(catalog.RetryPolicy(spec), res, int(executor.CurrentAttempt(call))); retry.Retry {
		r.startAttempt(ctx, call, int32(retry.NextAttempt))
		if err := r.status.writeStatus(ctx, call); err != nil {
			return ctrl.Result{}, err
		}
		r.stopper.forceDelete(ctx, overdue)
		exec.Release(ctx, call, ended, o)
		return r.execute(ctx, call)
	}
	executed := metav1.ConditionTrue
	if res.IsError {
		executed = metav1.ConditionFalse
	}
	r.setCondition(call, v1alpha1.ConditionExecuted, executed, string(res.Reason), executedMessage(res, o))
	postStart := r.Clock.Now()
	final, decision, err := r.review.postExecute(ctx, call, res)
	if err != nil {
		return r.review.policiesUnavailable(ctx, call, err)
	}
	postExecuted := r.Clock.Now()
	// Allow is ResultAccepted or ResultRedacted: the condition says which.
	r.admission.setStage(call, v1alpha1.ConditionResultAccepted, decision, string(decision.Reason))
	phase := v1alpha1.PhaseSucceeded
	if final.IsError {
		phase = v1alpha1.PhaseFailed
	}
	r.status.setTerminal(call, phase, final, r.Clock.Now())
	traceFinal(ctx, decision, final, postStart, postExecuted, r.Clock.Now())
	defer metrics.StageDuration.WithLabelValues("outcome").Observe(r.Clock.Since(start).Seconds())
	if err := r.status.writeTerminal(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	r.stopper.forceDelete(ctx, overdue)
	exec.Release(ctx, call, ended, o)
	return ctrl.Result{}, nil
}

// executedMessage is the Executed condition's message: the result's error, with the
// infrastructure's own words about the ending when it gave any (Outcome.Detail).
func executedMessage(res pipeline.Result, o pipeline.Outcome) string {
	if res.IsError && res.Error != "" {
		if o.Detail != "" {
			// Who said what (the kubelet: which Secret or key), for the platform team.
			return fmt.Sprintf("%s (%s)", res.Error, o.Detail)
		}
		return res.Error
	}
	return "the tool body ran to completion"
}
