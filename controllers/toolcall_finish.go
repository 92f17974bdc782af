package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/egressgrant"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/registration"
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
func (r *ToolCallReconciler) finishAttempt(ctx context.Context, call *v1alpha1.ToolCall, o pipeline.Outcome) (ctrl.Result, error) {
	var overdue []*corev1.Pod
	if o.Report == nil {
		st, err := r.stopAttemptPods(ctx, call, executor.Current(call))
		if err != nil {
			return ctrl.Result{}, err
		}
		if st.waiting() {
			r.decided.keep(ctx, call, o)
			return r.awaitStopped(ctx, call, st, fmt.Sprintf("attempt %d ended without the runner's account", executor.CurrentAttempt(call)))
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
		r.recordEgress(ctx, call, n)
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
		if err := r.writeStatus(ctx, call); err != nil {
			return ctrl.Result{}, err
		}
		r.forceDelete(ctx, overdue)
		exec.Release(ctx, call, ended, o)
		return r.execute(ctx, call)
	}
	executed := metav1.ConditionTrue
	if res.IsError {
		executed = metav1.ConditionFalse
	}
	r.setCondition(call, v1alpha1.ConditionExecuted, executed, string(res.Reason), executedMessage(res, o))
	postStart := r.Clock.Now()
	final, decision, err := r.postExecute(ctx, call, res)
	if err != nil {
		return r.policiesUnavailable(ctx, call, err)
	}
	postExecuted := r.Clock.Now()
	// Allow is ResultAccepted or ResultRedacted: the condition says which.
	r.setStage(call, v1alpha1.ConditionResultAccepted, decision, string(decision.Reason))
	phase := v1alpha1.PhaseSucceeded
	if final.IsError {
		phase = v1alpha1.PhaseFailed
	}
	r.setTerminal(call, phase, final, r.Clock.Now())
	traceFinal(ctx, decision, final, postStart, postExecuted, r.Clock.Now())
	defer metrics.StageDuration.WithLabelValues("outcome").Observe(r.Clock.Since(start).Seconds())
	if err := r.writeTerminal(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	r.forceDelete(ctx, overdue)
	exec.Release(ctx, call, ended, o)
	return ctrl.Result{}, nil
}

// postExecute applies the PostExecute policies and the tool's output schema to res, with
// the same tool and call admission saw (catalog.CallInput over the snapshot) and the policies
// read live, as admission reads them. It fails closed: policies that cannot be read are an
// error (the pass is retried by the controller's rate limiter) until postExecuteDeadline,
// then the result is withheld as PolicyError; arguments that no longer freeze to the
// admitted digest withhold it as PolicyError, an output schema that does not compile as
// OutputSchemaInvalid.
func (r *ToolCallReconciler) postExecute(ctx context.Context, call *v1alpha1.ToolCall, res pipeline.Result) (pipeline.Result, pipeline.Decision, error) {
	frozen, err := r.frozenArguments(call)
	if err != nil {
		final, d := pipeline.Withhold(res, pipeline.ReasonPolicyError,
			"the PostExecute policies could not be evaluated: the admitted arguments could not be reproduced: "+err.Error())
		return final, d, nil
	}
	output, schemaErr := registration.CompileSchema(r.Compiler, registration.RawOf(call.Status.Tool.Spec.Output))
	reg, err := r.liveRegistry(ctx, call.Namespace)
	if err != nil {
		deadline := r.postExecuteDeadline(call)
		if r.Clock.Now().Before(deadline) {
			return res, pipeline.Decision{}, err
		}
		final, d := pipeline.Withhold(res, pipeline.ReasonPolicyError,
			"the PostExecute policies could not be read by "+deadline.UTC().Format(time.RFC3339)+": "+err.Error())
		return final, d, nil
	}
	final, d := pipeline.PostExecute(r.Compiler.CompilePolicies(reg.policies), catalog.CallInput(call, frozen), res, output)
	if schemaErr != nil && !final.IsError {
		final, d = pipeline.Withhold(final, pipeline.ReasonOutputSchemaInvalid,
			"the tool's output schema does not compile: "+schemaErr.Error())
	}
	return final, d, nil
}

// policiesUnavailable records, once, that the result waits for the PostExecute policies
// (ResultAccepted=Unknown, and the attempt's completion time the deadline counts from),
// then returns err so that the controller retries the pass with its rate limiter.
func (r *ToolCallReconciler) policiesUnavailable(ctx context.Context, call *v1alpha1.ToolCall, err error) (ctrl.Result, error) {
	if c := meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionResultAccepted); c == nil || c.Reason != v1alpha1.ReasonPolicyUnavailable {
		r.setCondition(call, v1alpha1.ConditionResultAccepted, metav1.ConditionUnknown, v1alpha1.ReasonPolicyUnavailable,
			"the PostExecute policies could not be read ("+err.Error()+"); retrying until "+
				r.postExecuteDeadline(call).UTC().Format(time.RFC3339)+", then the result is withheld")
		if werr := r.writeStatus(ctx, call); werr != nil {
			return ctrl.Result{}, errors.Join(err, werr)
		}
	}
	ctrl.LoggerFrom(ctx).Info("PostExecute policies could not be read; retrying", "error", err.Error())
	return ctrl.Result{}, fmt.Errorf("reading PostExecute policies: %w", err)
}

// postExecuteDeadline is when a result whose PostExecute policies cannot be read is
// withheld: DeadlineGrace after the attempt's end was first seen, and never before the
// attempt's own deadline (the call ends by the time it would have timed out anyway).
func (r *ToolCallReconciler) postExecuteDeadline(call *v1alpha1.ToolCall) time.Time {
	deadline := r.attemptDeadline(call)
	if n := len(call.Status.Attempts); n > 0 && call.Status.Attempts[n-1].CompletionTime != nil {
		if end := call.Status.Attempts[n-1].CompletionTime.Add(r.Options.DeadlineGrace); end.After(deadline) {
			deadline = end
		}
	}
	return deadline
}

// recordEgress ends the grant of attempt n, the call's current one, and records what the
// proxy saw of it in its status, once, when the attempt ended (tools with sandbox.egress
// only; egressgrant.ProxyOptions.EndGrant).
func (r *ToolCallReconciler) recordEgress(ctx context.Context, call *v1alpha1.ToolCall, n int) {
	a := &call.Status.Attempts[n]
	if !egressgrant.Uses(call) || a.Egress != nil {
		return
	}
	// The expiry the grant was signed with: the same deadline, from the attempt's start.
	a.Egress = r.Options.EgressProxy.EndGrant(ctx, call, *a, r.attemptDeadline(call))
}

// frozenArguments are the arguments admission froze: the canonical bytes under the digest
// recorded in status, carried rather than frozen again (controllers/frozenargs).
func (r *ToolCallReconciler) frozenArguments(call *v1alpha1.ToolCall) (*pipeline.Frozen, error) {
	return r.frozen.Get(call, r.Options.MaxArgumentBytes)
}

// setTerminal is the one terminal path: result, digest, Normalized and Completed
// conditions, phase, completion time and duration. In memory; the caller writes.
func (r *ToolCallReconciler) setTerminal(call *v1alpha1.ToolCall, phase v1alpha1.ToolCallPhase, res pipeline.Result, now time.Time) {
	stored, err := pipeline.StoreResult(res)
	if err != nil {
		// A result JSON cannot hold (a NaN a policy produced, say) would leave the digest
		// empty and the status write refused: the call would never end. End it honestly.
		stored = unrepresentable(res)
		res = stored.Result
		if phase == v1alpha1.PhaseSucceeded {
			phase = v1alpha1.PhaseFailed
		}
	}
	digest := stored.Frozen.Digest()
	call.Status.Result = apiResult(stored)
	call.Status.ResultDigest = digest
	call.Status.Phase = phase
	call.Status.CompletionTime = ptrTime(now)
	call.Status.Duration = now.Sub(call.CreationTimestamp.Time).Round(100 * time.Millisecond).String()
	r.setExpiry(call, now)
	if call.Status.Verdict == "" && phase == v1alpha1.PhaseDenied {
		call.Status.Verdict = v1alpha1.VerdictDeny
	}
	r.setCondition(call, v1alpha1.ConditionNormalized, metav1.ConditionTrue, string(res.Reason), "the outcome is one structured result")
	r.setCondition(call, v1alpha1.ConditionCompleted, metav1.ConditionTrue, string(phase), "the result is frozen as "+digest)
}

// writeTerminal writes a terminal status. A result too large for the API server (etcd's
// object limit) is replaced by an OutputTooLarge error rather than lost in a retry loop.
func (r *ToolCallReconciler) writeTerminal(ctx context.Context, call *v1alpha1.ToolCall) error {
	err := r.writeStatus(ctx, call)
	if apierrors.IsRequestEntityTooLargeError(err) || (apierrors.IsInvalid(err) && call.Status.Result != nil && call.Status.Result.Content != nil) {
		ctrl.LoggerFrom(ctx).Info("result rejected by the API server; recording OutputTooLarge", "error", err.Error())
		r.setTerminal(call, v1alpha1.PhaseFailed, pipeline.Result{IsError: true, Reason: pipeline.ReasonOutputTooLarge,
			Error: "the tool's output is too large to store", Content: "the tool's output is too large to store"}, r.Clock.Now())
		err = r.writeStatus(ctx, call)
	}
	if err != nil {
		return err
	}
	r.afterStatusWrite(call, terminalEvents(call))
	res := call.Status.Result
	ctrl.LoggerFrom(ctx).Info("call completed", "tool", call.Spec.Tool, "phase", call.Status.Phase,
		"reason", res.Reason, "attempts", len(call.Status.Attempts), "duration", call.Status.Duration, "resultDigest", call.Status.ResultDigest)
	return nil
}

// finishInternal ends a call that cannot continue; it never stays without a result.
func (r *ToolCallReconciler) finishInternal(ctx context.Context, call *v1alpha1.ToolCall, msg string) (ctrl.Result, error) {
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
	case pipeline.ReasonRuntimeClassRequired:
		msg = "the tool may not run in this scope: the scope requires another sandbox runtime"
	}
	return pipeline.Result{IsError: true, Reason: d.Reason, Error: msg, Content: msg}
}

// apiResult is the API form of a stored result (stage 8, pipeline.StoreResult): its
// content is written as the JSON its digest was made of.
func apiResult(stored pipeline.StoredResult) *v1alpha1.ToolResult {
	res := stored.Result
	out := &v1alpha1.ToolResult{OK: res.OK, IsError: res.IsError, Error: res.Error, Reason: string(res.Reason), Meta: res.Meta}
	if stored.Content != nil {
		out.Content = &apiextensionsv1.JSON{Raw: stored.Content}
	}
	return out
}

// unrepresentable is the stored isError result that replaces one JSON cannot represent;
// it keeps the attempt's meta (facts about the call) when that can be stored, and nothing
// of the content.
func unrepresentable(res pipeline.Result) pipeline.StoredResult {
	msg := "the call's result could not be represented as JSON"
	out := pipeline.Result{IsError: true, Reason: ReasonOperatorError, Error: msg, Content: msg, Meta: res.Meta}
	if stored, err := pipeline.StoreResult(out); err == nil {
		return stored
	}
	out.Meta = nil
	stored, _ := pipeline.StoreResult(out) // a fixed message and nothing else: always stored
	return stored
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
