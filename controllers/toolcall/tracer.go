package toolcall

import (
	"context"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/tracing"
)

// CallTracer makes one OpenTelemetry trace of each ToolCall: Begin opens the context of one
// reconcile pass of the call, in which the pass records and exports its stages. Build one
// with TraceTo; cmd/manager passes its OTLP tracer (internal/tracing). The stages are
// recorded only in a context its own Begin made, so another implementation traces nothing.
type CallTracer interface {
	Begin(ctx context.Context, call *v1alpha1.ToolCall) context.Context
}

// TraceTo is a CallTracer that exports every call's spans to exp synchronously, as each
// pass's status write succeeds (tests: tracetest.NewInMemoryExporter()).
func TraceTo(exp sdktrace.SpanExporter) CallTracer { return tracing.NewForExporter(exp) }

// beginTrace opens the pass's trace context; a nil tracer traces nothing.
func beginTrace(ctx context.Context, t CallTracer, call *v1alpha1.ToolCall) context.Context {
	if t == nil {
		return ctx
	}
	return t.Begin(ctx, call)
}
