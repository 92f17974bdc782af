package tracing

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// Stage is one finished stage of a call, recorded by the pass that ran (or read) it.
type Stage struct {
	// Name is one of the Span* names; Attempt the attempt it belongs to (0: none).
	Name    string
	Attempt int
	// Start and End bound the stage. Times read from the call's status have whole seconds
	// (the API's resolution); times the pass measured itself are exact.
	Start, End time.Time
	// Verdict and Reason are the stage's decision, when it made one.
	Verdict string
	Reason  string
	// Failed marks the span as an error (the stage refused or the attempt failed).
	Failed bool
	// Job names the attempt's Job.
	Job string
}

// pass is what one reconcile pass of one call recorded.
type pass struct {
	t    *Tracer
	ids  CallIDs
	base []attribute.KeyValue

	mu     sync.Mutex
	stages []Stage
}

type passKey struct{}

// Begin starts a pass for call: Record and Flush with the returned context record and
// export its stages. With a nil Tracer it returns ctx itself.
func (t *Tracer) Begin(ctx context.Context, call *v1alpha1.ToolCall) context.Context {
	if t == nil || call == nil {
		return ctx
	}
	p := &pass{t: t, ids: IDsFor(string(call.UID), call.Annotations[v1alpha1.AnnotationTraceparent]),
		base: []attribute.KeyValue{AttrCall.String(call.Name), AttrNamespace.String(call.Namespace),
			AttrCallUID.String(string(call.UID)), AttrTool.String(call.Spec.Tool)}}
	if call.Spec.Session != "" {
		p.base = append(p.base, AttrSession.String(call.Spec.Session))
	}
	return context.WithValue(ctx, passKey{}, p)
}

func passFrom(ctx context.Context) *pass {
	p, _ := ctx.Value(passKey{}).(*pass)
	return p
}

// Enabled reports whether ctx belongs to a traced pass (callers skip work otherwise).
func Enabled(ctx context.Context) bool { return passFrom(ctx) != nil }

// Record notes a finished stage of the pass; it is exported by the next Flush.
func Record(ctx context.Context, s Stage) {
	p := passFrom(ctx)
	if p == nil || s.Start.IsZero() || s.End.IsZero() {
		return
	}
	if s.End.Before(s.Start) {
		s.End = s.Start
	}
	p.mu.Lock()
	p.stages = append(p.stages, s)
	p.mu.Unlock()
}

// ExecutionTraceparent is the TRACEPARENT for the body of call's attempt; "" when ctx is
// not traced.
func ExecutionTraceparent(ctx context.Context, attempt int) string {
	p := passFrom(ctx)
	if p == nil {
		return ""
	}
	return p.ids.ExecutionTraceparent(attempt)
}

// Flush exports the stages recorded since the last Flush. Call it after the status write
// that records them succeeded: a pass whose write failed is run again, and records again.
// When call is terminal it also exports the root span, from the call's creation to end.
func Flush(ctx context.Context, call *v1alpha1.ToolCall, end time.Time) {
	p := passFrom(ctx)
	if p == nil {
		return
	}
	p.mu.Lock()
	stages := p.stages
	p.stages = nil
	p.mu.Unlock()
	for _, s := range stages {
		p.export(ctx, s)
	}
	if call != nil && call.Status.Phase.IsTerminal() {
		p.exportRoot(ctx, call, end)
	}
}

func (p *pass) export(ctx context.Context, s Stage) {
	attrs := append([]attribute.KeyValue{}, p.base...)
	if s.Attempt > 0 {
		attrs = append(attrs, AttrAttempt.Int(s.Attempt))
	}
	if s.Verdict != "" {
		attrs = append(attrs, AttrVerdict.String(s.Verdict))
	}
	if s.Reason != "" {
		attrs = append(attrs, AttrReason.String(s.Reason))
	}
	if s.Job != "" {
		attrs = append(attrs, AttrJob.String(s.Job))
	}
	parent := trace.ContextWithSpanContext(ctx, p.ids.Root())
	p.emit(parent, s.Name, p.ids.Span(s.Name, s.Attempt), s.Start, s.End, s.Failed, s.Reason, attrs)
}

func (p *pass) exportRoot(ctx context.Context, call *v1alpha1.ToolCall, end time.Time) {
	st := &call.Status
	attrs := append([]attribute.KeyValue{}, p.base...)
	attrs = append(attrs, AttrPhase.String(string(st.Phase)), AttrAttempts.Int(len(st.Attempts)))
	if st.Verdict != "" {
		attrs = append(attrs, AttrVerdict.String(string(st.Verdict)))
	}
	reason := ""
	if st.Result != nil {
		reason = st.Result.Reason
	}
	if reason != "" {
		attrs = append(attrs, AttrReason.String(reason))
	}
	parent := context.Background()
	if p.ids.Caller.IsValid() {
		parent = trace.ContextWithRemoteSpanContext(ctx, p.ids.Caller)
	}
	failed := st.Result != nil && st.Result.IsError
	p.emit(parent, SpanCall, p.ids.Root().SpanID(), call.CreationTimestamp.Time, end, failed, reason, attrs)
}

func (p *pass) emit(parent context.Context, name string, id trace.SpanID, start, end time.Time, failed bool, reason string, attrs []attribute.KeyValue) {
	ctx := context.WithValue(parent, spanIDKey{}, fixedIDs{trace: p.ids.Trace, span: id})
	kind := trace.SpanKindInternal
	if name == SpanCall {
		kind = trace.SpanKindServer
	}
	_, span := p.t.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	if failed {
		span.SetStatus(codes.Error, reason)
	}
	span.End(trace.WithTimestamp(end))
}
