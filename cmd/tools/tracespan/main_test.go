package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

const testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// With OTEL_EXPORTER_OTLP_ENDPOINT the body posts its span, as OTLP/JSON, to
// <endpoint>/v1/traces: in the caller's trace, a child of the TRACEPARENT span.
func TestExportsItsSpanToTheEndpoint(t *testing.T) {
	var got struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct{ TraceID, SpanID, ParentSpanID, Name string }
			}
		}
	}
	var path, contentType string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, contentType = r.URL.Path, r.Header.Get("Content-Type")
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("not OTLP/JSON: %v: %s", err, b)
		}
	}))
	defer srv.Close()
	t.Setenv("TRACEPARENT", testTraceparent)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL+"/")
	r := mustRun(t)
	if !r.Exported || r.ExportError != "" {
		t.Fatalf("not exported: %+v", r)
	}
	if path != "/v1/traces" || contentType != "application/json" {
		t.Errorf("posted to %q as %q", path, contentType)
	}
	if len(got.ResourceSpans) != 1 || len(got.ResourceSpans[0].ScopeSpans) != 1 || len(got.ResourceSpans[0].ScopeSpans[0].Spans) != 1 {
		t.Fatalf("want one span: %+v", got)
	}
	s := got.ResourceSpans[0].ScopeSpans[0].Spans[0]
	if s.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || s.ParentSpanID != "00f067aa0ba902b7" || s.SpanID != r.SpanID || s.Name != "tool-body" {
		t.Errorf("span %+v, report %+v", s, r)
	}
}

// A collector that cannot be reached, or refuses, is an error in the report, not a failed
// call; without an endpoint nothing is posted.
func TestExportFailureIsReported(t *testing.T) {
	t.Setenv("TRACEPARENT", testTraceparent)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens there now
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", closed.URL)
	if r := mustRun(t); r.Exported || r.ExportError == "" {
		t.Errorf("nothing listening: %+v", r)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	if r := mustRun(t); r.Exported || r.ExportError != "OTLP receiver answered 503 Service Unavailable" {
		t.Errorf("a 503: %+v", r)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	if r := mustRun(t); r.Exported || r.ExportError != "" || r.OTLP == nil {
		t.Errorf("no endpoint: %+v", r)
	}
}

func mustRun(t *testing.T) report {
	t.Helper()
	out, err := run([]byte(`{"millis":1}`))
	if err != nil {
		t.Fatal(err)
	}
	return out.(report)
}
