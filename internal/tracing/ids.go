package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// CallIDs are the trace identity of one ToolCall. Every ID is a pure function of the
// call's UID and its traceparent annotation, so every pass of the reconciler — before and
// after an operator restart, on any replica — names the same trace and the same spans.
type CallIDs struct {
	// Trace is the caller's trace ID when the call carries a valid traceparent, else one
	// derived from the call's UID.
	Trace trace.TraceID
	// Caller is the caller's span (the root span's parent); invalid without a traceparent.
	Caller trace.SpanContext
	// Flags are the caller's trace flags (sampled when the call carries no traceparent).
	Flags trace.TraceFlags
	uid   string
}

// IDsFor derives a call's trace identity from its UID and the value of its
// toolgate.dev/traceparent annotation (W3C traceparent; empty or malformed: none).
func IDsFor(uid, traceparent string) CallIDs {
	ids := CallIDs{uid: uid, Flags: trace.FlagsSampled}
	if sc := ParseTraceparent(traceparent); sc.IsValid() {
		ids.Caller, ids.Trace, ids.Flags = sc, sc.TraceID(), sc.TraceFlags()
		return ids
	}
	sum := sha256.Sum256([]byte("toolgate.dev/trace\x00" + uid))
	copy(ids.Trace[:], sum[:16])
	return ids
}

// ParseTraceparent reads a W3C traceparent header value; the zero SpanContext if it is
// not one.
func ParseTraceparent(v string) trace.SpanContext {
	if v == "" || len(v) > 128 {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": v})
	return trace.SpanContextFromContext(ctx)
}

// FormatTraceparent is the W3C traceparent value of sc ("" for an invalid one).
func FormatTraceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
	return carrier["traceparent"]
}

// Span is the ID of the call's span name for attempt (0 for spans not of one attempt).
func (c CallIDs) Span(name string, attempt int) trace.SpanID {
	sum := sha256.Sum256([]byte("toolgate.dev/span\x00" + c.uid + "\x00" + name + "\x00" + strconv.Itoa(attempt)))
	var id trace.SpanID
	copy(id[:], sum[:8])
	if binary.BigEndian.Uint64(id[:]) == 0 { // never: an all-zero ID is invalid
		id[7] = 1
	}
	return id
}

// Context is the span context of the call's span name for attempt.
func (c CallIDs) Context(name string, attempt int) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: c.Trace, SpanID: c.Span(name, attempt), TraceFlags: c.Flags})
}

// Root is the span context of the call's root span (SpanCall).
func (c CallIDs) Root() trace.SpanContext { return c.Context(SpanCall, 0) }

// ExecutionTraceparent is the traceparent a tool body receives as TRACEPARENT: the
// context of the attempt's execution span (SpanExecute), which the operator exports when
// the attempt ends.
func (c CallIDs) ExecutionTraceparent(attempt int) string {
	return FormatTraceparent(c.Context(SpanExecute, attempt))
}
