package toolcall

import (
	"context"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/internal/events"
	"github.com/toolgate/toolgate/internal/tracing"
	"github.com/toolgate/toolgate/pipeline"
)

// writeStatus writes the call's status and remembers how far it moved the call.
// A terminal write that succeeded is counted and audited here, once; one whose outcome is
// unknown (an error other than a conflict: it may have been applied) is audited when the
// call is next seen terminal (auditRecovered).
func (w *statusWriter) writeStatus(ctx context.Context, call *v1alpha1.ToolCall) error {
	r := w.r
	written := r.Clock.Now()
	if err := r.Status().Update(ctx, call); err != nil {
		if call.Status.Phase.IsTerminal() && !apierrors.IsConflict(err) && !apierrors.IsInvalid(err) && !apierrors.IsRequestEntityTooLargeError(err) {
			r.audit.pending.hold(call)
		}
		return err
	}
	w.written.record(call)
	tracing.Flush(ctx, call, written)
	if call.Status.Phase.IsTerminal() {
		countTerminal(call)
		r.audit.pending.forget(client.ObjectKeyFromObject(call))
		r.frozen.Forget(client.ObjectKeyFromObject(call))
		r.admission.held.forget(client.ObjectKeyFromObject(call))
		r.decided.forget(client.ObjectKeyFromObject(call))
		r.issued.forget(client.ObjectKeyFromObject(call))
		r.audit.emitAudit(ctx, call, false)
	}
	return nil
}

// setTerminal is the one terminal path: result, digest, Normalized and Completed
// conditions, phase, completion time and duration. In memory; the caller writes.
func (w *statusWriter) setTerminal(call *v1alpha1.ToolCall, phase v1alpha1.ToolCallPhase, res pipeline.Result, now time.Time) {
	r := w.r
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
	r.retention.setExpiry(call, now)
	if call.Status.Verdict == "" && phase == v1alpha1.PhaseDenied {
		call.Status.Verdict = v1alpha1.VerdictDeny
	}
	r.setCondition(call, v1alpha1.ConditionNormalized, metav1.ConditionTrue, string(res.Reason), "the outcome is one structured result")
	r.setCondition(call, v1alpha1.ConditionCompleted, metav1.ConditionTrue, string(phase), "the result is frozen as "+digest)
}

// writeTerminal writes a terminal status. A result too large for the API server (etcd's
// object limit) is replaced by an OutputTooLarge error rather than lost in a retry loop.
func (w *statusWriter) writeTerminal(ctx context.Context, call *v1alpha1.ToolCall) error {
	r := w.r
	err := w.writeStatus(ctx, call)
	if apierrors.IsRequestEntityTooLargeError(err) || (apierrors.IsInvalid(err) && call.Status.Result != nil && call.Status.Result.Content != nil) {
		ctrl.LoggerFrom(ctx).Info("result rejected by the API server; recording OutputTooLarge", "error", err.Error())
		w.setTerminal(call, v1alpha1.PhaseFailed, pipeline.Result{IsError: true, Reason: pipeline.ReasonOutputTooLarge,
			Error: "the tool's output is too large to store", Content: "the tool's output is too large to store"}, r.Clock.Now())
		err = w.writeStatus(ctx, call)
	}
	if err != nil {
		return err
	}
	w.afterStatusWrite(call, terminalEvents(call))
	res := call.Status.Result
	ctrl.LoggerFrom(ctx).Info("call completed", "tool", call.Spec.Tool, "phase", call.Status.Phase,
		"reason", res.Reason, "attempts", len(call.Status.Attempts), "duration", call.Status.Duration, "resultDigest", call.Status.ResultDigest)
	return nil
}

// afterStatusWrite emits events only once the status that records them is written.
func (w *statusWriter) afterStatusWrite(call *v1alpha1.ToolCall, evs []event) {
	r := w.r
	for _, e := range evs {
		events.Emit(r.Recorder, call, e.Type, e.Reason, e.Action, e.Note)
	}
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
