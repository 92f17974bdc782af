package toolcall

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/tracing"
	"github.com/toolgate/toolgate/pipeline"
)

// The reconciler's tracing hooks (internal/tracing): each records the stages one pass ran
// or ended; writeStatus exports them after the write that records them succeeded. Times
// that span passes (an attempt's start, the approval's wait) come from the call's status,
// so a restart between passes loses no span. Without a tracer every hook returns at once.

// traceAdmission records the resolution and the pure stages an admission pass ran.
func traceAdmission(ctx context.Context, passStart time.Time, out admission, now time.Time) {
	if !tracing.Enabled(ctx) {
		return
	}
	t := out.stages.Times
	resolved := t.Freeze.Start
	if resolved.IsZero() {
		resolved = now // refused before the pure stages: subject, unknown tool, bad schema
	}
	tracing.Record(ctx, tracing.Stage{Name: tracing.SpanResolve, Start: passStart, End: resolved,
		Failed: t.Freeze.Start.IsZero() && out.verdict == pipeline.Deny, Reason: reasonIf(t.Freeze.Start.IsZero(), out.reason)})
	for _, s := range []struct {
		name string
		iv   pipeline.Interval
		d    pipeline.Decision
	}{
		{tracing.SpanFreeze, t.Freeze, out.stages.Freeze}, {tracing.SpanValidate, t.Validate, out.stages.Validate},
		{tracing.SpanPreExecute, t.PreExecute, out.stages.PreExecute}, {tracing.SpanGuard, t.Guard, out.stages.Guard},
	} {
		tracing.Record(ctx, tracing.Stage{Name: s.name, Start: s.iv.Start, End: s.iv.End, Verdict: string(s.d.Verdict),
			Reason: string(s.d.Reason), Failed: s.d.Verdict == pipeline.Deny})
	}
}

// traceApproval records the wait for an approval, from admission to the decision.
func traceApproval(ctx context.Context, call *v1alpha1.ToolCall, d pipeline.Decision, now time.Time) {
	if !tracing.Enabled(ctx) || call.Status.AdmittedTime == nil {
		return
	}
	tracing.Record(ctx, tracing.Stage{Name: tracing.SpanApproval, Start: call.Status.AdmittedTime.Time, End: now,
		Verdict: string(d.Verdict), Reason: string(d.Reason), Failed: d.Verdict == pipeline.Deny})
}

// traceAttempt records an attempt that ended (the pass that first saw its end): the Job
// and Pod start, up to the tool container's start, and the execution (whose context the
// body had as TRACEPARENT) up to end, plus the normalisation of its outcome.
func traceAttempt(ctx context.Context, call *v1alpha1.ToolCall, n int, res pipeline.Result, end, normalized time.Time) {
	if !tracing.Enabled(ctx) {
		return
	}
	a := call.Status.Attempts[n]
	if a.StartTime == nil {
		return
	}
	attempt, reason := int(a.Attempt), ""
	if res.IsError {
		reason = string(res.Reason)
	}
	start := a.StartTime.Time
	if started, ok := ctx.Value(containerStartKey{}).(time.Time); ok && !started.Before(start) {
		tracing.Record(ctx, tracing.Stage{Name: tracing.SpanJobStart, Attempt: attempt, Start: start, End: started, Job: a.JobName})
		start = started
	}
	tracing.Record(ctx, tracing.Stage{Name: tracing.SpanExecute, Attempt: attempt, Start: start, End: end,
		Job: a.JobName, Reason: reason, Failed: res.IsError})
	tracing.Record(ctx, tracing.Stage{Name: tracing.SpanNormalize, Attempt: attempt, Start: end, End: normalized,
		Reason: reason, Failed: res.IsError})
}

// traceFinal records the final pass's post-execute and result freeze.
func traceFinal(ctx context.Context, post pipeline.Decision, final pipeline.Result, start, postExecuted, frozen time.Time) {
	if !tracing.Enabled(ctx) {
		return
	}
	tracing.Record(ctx, tracing.Stage{Name: tracing.SpanPostExecute, Start: start, End: postExecuted,
		Verdict: string(post.Verdict), Reason: string(post.Reason), Failed: post.Verdict == pipeline.Deny})
	tracing.Record(ctx, tracing.Stage{Name: tracing.SpanFreezeResult, Start: postExecuted, End: frozen,
		Reason: reasonIf(final.IsError, final.Reason), Failed: final.IsError})
}

// containerStartKey carries the tool container's start (observe) to traceAttempt.
type containerStartKey struct{}

// withContainerStart notes when the tool container started (zero: unknown), for traceAttempt.
func withContainerStart(ctx context.Context, started time.Time) context.Context {
	if !tracing.Enabled(ctx) || started.IsZero() {
		return ctx
	}
	return context.WithValue(ctx, containerStartKey{}, started)
}

func reasonIf(cond bool, r pipeline.Reason) string {
	if cond {
		return string(r)
	}
	return ""
}
