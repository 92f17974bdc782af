package tracing

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

const callerTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestIDsFor(t *testing.T) {
	a, b := IDsFor("uid-1", ""), IDsFor("uid-1", "")
	if a.Trace != b.Trace || !a.Root().Equal(b.Root()) || a.Span(SpanExecute, 2) != b.Span(SpanExecute, 2) {
		t.Fatal("the same call must always get the same IDs")
	}
	if !a.Trace.IsValid() || a.Caller.IsValid() || !a.Flags.IsSampled() {
		t.Fatalf("no traceparent: a derived, sampled trace without caller: %+v", a)
	}
	if other := IDsFor("uid-2", ""); other.Trace == a.Trace || other.Root().SpanID() == a.Root().SpanID() {
		t.Fatal("two calls must not share a trace or root span")
	}
	if a.Span(SpanExecute, 1) == a.Span(SpanExecute, 2) || a.Span(SpanExecute, 1) == a.Span(SpanJobStart, 1) {
		t.Fatal("attempts and stages must get different span IDs")
	}
	c := IDsFor("uid-1", callerTP)
	if c.Trace.String() != "4bf92f3577b34da6a3ce929d0e0e4736" || c.Caller.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("the caller's trace is joined: %+v", c)
	}
	for _, bad := range []string{"garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", strings.Repeat("0", 200)} {
		if IDsFor("uid-1", bad).Trace != a.Trace {
			t.Fatalf("a malformed traceparent %q is ignored", bad)
		}
	}
	tp := c.ExecutionTraceparent(3)
	if sc := ParseTraceparent(tp); sc.TraceID() != c.Trace || sc.SpanID() != c.Span(SpanExecute, 3) || !sc.IsSampled() {
		t.Fatalf("execution traceparent %q does not name the execution span", tp)
	}
	if unsampled := IDsFor("u", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"); unsampled.Flags.IsSampled() {
		t.Fatal("the caller's unsampled flag is kept")
	}
}

func testCall(tp string) *v1alpha1.ToolCall {
	c := &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "ns", UID: "uid-1",
		CreationTimestamp: metav1.NewTime(time.Unix(100, 0))}}
	c.Spec.Tool = "echo"
	if tp != "" {
		c.Annotations = map[string]string{v1alpha1.AnnotationTraceparent: tp}
	}
	return c
}

func TestPassFlush(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := NewForExporter(exp)
	call := testCall(callerTP)
	ctx := tr.Begin(context.Background(), call)
	t0 := time.Unix(101, 0)
	Record(ctx, Stage{Name: SpanFreeze, Start: t0, End: t0.Add(time.Millisecond), Verdict: "Allow"})
	Record(ctx, Stage{Name: SpanExecute, Attempt: 1, Start: t0, End: t0.Add(time.Second), Reason: "OOMKilled", Failed: true})
	Record(ctx, Stage{Name: SpanGuard}) // untimed: dropped
	Flush(ctx, call, t0.Add(2*time.Second))
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("a non-terminal call exports its stages only: %d spans", len(spans))
	}
	ids := IDsFor("uid-1", callerTP)
	for _, s := range spans {
		if s.SpanContext.TraceID() != ids.Trace || s.Parent.SpanID() != ids.Root().SpanID() {
			t.Fatalf("span %s: trace %s parent %s", s.Name, s.SpanContext.TraceID(), s.Parent.SpanID())
		}
	}
	exec := spans[1]
	if exec.SpanContext.SpanID() != ids.Span(SpanExecute, 1) || !exec.StartTime.Equal(t0) || exec.Status.Code.String() != "Error" {
		t.Fatalf("execute span: %+v", exec)
	}
	if ParseTraceparent(ExecutionTraceparent(ctx, 1)).SpanID() != exec.SpanContext.SpanID() {
		t.Fatal("the body's TRACEPARENT names the exported execution span")
	}

	exp.Reset()
	call.Status.Phase = v1alpha1.PhaseSucceeded
	Flush(ctx, call, t0.Add(3*time.Second))
	root := exp.GetSpans()
	if len(root) != 1 || root[0].Name != SpanCall || root[0].SpanKind != trace.SpanKindServer {
		t.Fatalf("a terminal flush exports the root span only once the stages went: %+v", root)
	}
	if root[0].Parent.SpanID().String() != "00f067aa0ba902b7" || !root[0].Parent.IsRemote() ||
		root[0].SpanContext.SpanID() != ids.Root().SpanID() || !root[0].StartTime.Equal(time.Unix(100, 0)) {
		t.Fatalf("root span: %+v", root[0])
	}
}

func TestNoCallerRootHasNoParent(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	call := testCall("")
	call.Status.Phase = v1alpha1.PhaseDenied
	ctx := NewForExporter(exp).Begin(context.Background(), call)
	Flush(ctx, call, time.Unix(101, 0))
	s := exp.GetSpans()
	if len(s) != 1 || s[0].Parent.IsValid() || s[0].SpanContext.TraceID() != IDsFor("uid-1", "").Trace {
		t.Fatalf("root without caller: %+v", s)
	}
}

func TestUnsampledCallerExportsNothing(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	call := testCall("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	call.Status.Phase = v1alpha1.PhaseSucceeded
	ctx := NewForExporter(exp).Begin(context.Background(), call)
	Record(ctx, Stage{Name: SpanFreeze, Start: time.Unix(101, 0), End: time.Unix(102, 0)})
	Flush(ctx, call, time.Unix(103, 0))
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("the caller did not sample the trace: %d spans exported", n)
	}
}

func TestNilTracerIsNoOp(t *testing.T) {
	var tr *Tracer
	ctx := context.Background()
	if got := tr.Begin(ctx, testCall(callerTP)); got != ctx || Enabled(got) || ExecutionTraceparent(got, 1) != "" {
		t.Fatal("a nil tracer leaves the context alone")
	}
	Record(ctx, Stage{Name: SpanFreeze, Start: time.Unix(1, 0), End: time.Unix(2, 0)})
	Flush(ctx, testCall(""), time.Now())
	if tr.Shutdown(ctx) != nil || tr.Enabled() {
		t.Fatal("a nil tracer shuts down quietly")
	}
	if got, err := New(ctx, Options{}); got != nil || err != nil {
		t.Fatalf("no endpoint: no tracer, no error (%v, %v)", got, err)
	}
	if _, err := New(ctx, Options{Endpoint: "x:1", Protocol: "carrier-pigeon"}); err == nil {
		t.Fatal("an unknown protocol is refused")
	}
}

// BenchmarkDisabled: what the reconciler's hooks cost without a tracer (report only).
func BenchmarkDisabled(b *testing.B) {
	var tr *Tracer
	call := testCall(callerTP)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		ctx := tr.Begin(context.Background(), call)
		Record(ctx, Stage{Name: SpanFreeze, Start: now, End: now})
		Flush(ctx, call, now)
	}
}

var _ sdktrace.SpanExporter = tracetest.NewInMemoryExporter()
