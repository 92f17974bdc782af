// Package tracing makes one OpenTelemetry trace of each ToolCall: a root span whose parent
// is the caller's span (the toolgate.dev/traceparent annotation), a span per pipeline
// stage, and the execution span whose context the tool body receives as TRACEPARENT.
//
// The reconciler works in passes, and an operator restart can fall between any two. So no
// span is kept open across passes: a pass records the stages it ran, with the timestamps it
// measured or read from the call's status (attempt and approval times survive a restart
// there), and exports them right after its status write succeeded (Flush). Every trace and
// span ID is derived from the call's UID (CallIDs), so spans exported by different passes,
// processes or replicas join into one trace. A nil *Tracer is the no-op tracer: Begin
// returns its context unchanged and Record and Flush cost a context lookup.
package tracing

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Options configure the exporter. An empty Endpoint means no tracing (New returns nil).
type Options struct {
	// Endpoint is the OTLP receiver, host:port (e.g. jaeger:4317 for grpc, :4318 for http).
	Endpoint string
	// Protocol is "grpc" (default) or "http" (OTLP/HTTP protobuf).
	Protocol string
	// Insecure sends in plaintext instead of TLS.
	Insecure bool
	// ServiceName is the resource's service.name (default "toolgate").
	ServiceName string
	// BatchTimeout is the longest a finished span waits to be sent (default 2s).
	BatchTimeout time.Duration
}

// Tracer exports the calls' spans. The zero of *Tracer (nil) traces nothing.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// New builds the OTLP exporter and the tracer for opts; nil (no tracing) when
// opts.Endpoint is empty. The exporter connects lazily: an unreachable receiver costs
// dropped spans, never a failed call.
func New(ctx context.Context, opts Options) (*Tracer, error) {
	if opts.Endpoint == "" {
		return nil, nil
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch opts.Protocol {
	case "", "grpc":
		o := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(opts.Endpoint)}
		if opts.Insecure {
			o = append(o, otlptracegrpc.WithInsecure())
		}
		exp, err = otlptracegrpc.New(ctx, o...)
	case "http", "http/protobuf":
		o := []otlptracehttp.Option{otlptracehttp.WithEndpoint(opts.Endpoint)}
		if opts.Insecure {
			o = append(o, otlptracehttp.WithInsecure())
		}
		exp, err = otlptracehttp.New(ctx, o...)
	default:
		return nil, fmt.Errorf("tracing protocol %q: want grpc or http", opts.Protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	batch := opts.BatchTimeout
	if batch <= 0 {
		batch = 2 * time.Second
	}
	host, _ := os.Hostname() // the Pod's name: which replica exported a span
	return newTracer(opts.ServiceName, sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(batch)),
		attribute.String("service.instance.id", host)), nil
}

// NewForExporter is a tracer exporting synchronously to exp (tests: an in-memory exporter).
func NewForExporter(exp sdktrace.SpanExporter) *Tracer {
	return newTracer("", sdktrace.WithSyncer(exp), attribute.String("service.instance.id", "test"))
}

func newTracer(service string, export sdktrace.TracerProviderOption, instance attribute.KeyValue) *Tracer {
	if service == "" {
		service = "toolgate"
	}
	tp := sdktrace.NewTracerProvider(export,
		sdktrace.WithIDGenerator(callIDGenerator{}),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service), instance)))
	return &Tracer{provider: tp, tracer: tp.Tracer("github.com/toolgate/toolgate")}
}

// Enabled reports whether t exports anything.
func (t *Tracer) Enabled() bool { return t != nil }

// Shutdown sends what is buffered and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// ForceFlush sends what is buffered.
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.ForceFlush(ctx)
}

// spanIDKey carries the ID the next span must get (callIDGenerator).
type spanIDKey struct{}

// callIDGenerator gives a span the deterministic IDs its pass put in the context, so that
// the SDK's spans carry the IDs CallIDs derives. Without them (never, in this package) it
// draws random ones.
type callIDGenerator struct{}

type fixedIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

func (callIDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if ids, ok := ctx.Value(spanIDKey{}).(fixedIDs); ok {
		return ids.trace, ids.span
	}
	var t trace.TraceID
	var s trace.SpanID
	_, _ = rand.Read(t[:])
	_, _ = rand.Read(s[:])
	return t, s
}

func (callIDGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if ids, ok := ctx.Value(spanIDKey{}).(fixedIDs); ok {
		return ids.span
	}
	var s trace.SpanID
	_, _ = rand.Read(s[:])
	return s
}
