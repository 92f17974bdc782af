package main

import (
	"context"
	"flag"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/tracing"
)

func TestTracingFlags(t *testing.T) {
	fs := flag.NewFlagSet("m", flag.ContinueOnError)
	o := bindTracing(fs)
	if err := fs.Parse(nil); err != nil || o.Endpoint != "" {
		t.Fatalf("off by default: endpoint %q, err %v", o.Endpoint, err)
	}
	if tr, err := tracing.New(context.Background(), o.Options); tr != nil || err != nil {
		t.Fatalf("no endpoint: no tracer (%v, %v)", tr, err)
	}
	fs = flag.NewFlagSet("m", flag.ContinueOnError)
	o = bindTracing(fs)
	if err := fs.Parse([]string{"--tracing-endpoint=127.0.0.1:4318", "--tracing-protocol=http", "--tracing-insecure"}); err != nil {
		t.Fatal(err)
	}
	tr, err := tracing.New(context.Background(), o.Options)
	if err != nil || !tr.Enabled() {
		t.Fatalf("an endpoint makes a tracer: %v", err)
	}
	if err := shutdownTracer(tr); err != nil {
		t.Fatalf("shutdown with nothing to send: %v", err)
	}
}

func TestTracingToolEndpointFlag(t *testing.T) {
	parse := func(args ...string) (string, error) {
		t.Helper()
		fs := flag.NewFlagSet("m", flag.ContinueOnError)
		o := bindTracing(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return o.toolOTLPEndpoint()
	}
	if ep, err := parse("--tracing-endpoint=jaeger:4317"); ep != "" || err != nil {
		t.Fatalf("off by default: %q, %v", ep, err)
	}
	for _, ok := range []string{"http://198.51.100.1:4318", "https://otel.example.com", "http://collector:4318/otlp/", "http://[2001:db8::1]:4318"} {
		if ep, err := parse("--tracing-endpoint=jaeger:4317", "--tracing-tool-endpoint="+ok); ep != ok || err != nil {
			t.Errorf("%s: got %q, %v", ok, ep, err)
		}
	}
	for bad, why := range map[string]string{
		"collector:4318":                       "http:// or https://",
		"grpc://collector:4317":                "http:// or https://",
		"http://":                              "no host",
		"http://user:secret@collector:4318":    "no credentials",
		"http://collector:4318/?x=1":           "no query",
		"http://collector:4318/#frag":          "no query",
		"http://collector:4318/v1/traces":      "append /v1/traces",
		"http://collector:43x8":                "invalid port",
		"http://collector:4318/\x7f":           "invalid control character",
		"https://collector.example/v1/traces/": "append /v1/traces",
	} {
		ep, err := parse("--tracing-endpoint=jaeger:4317", "--tracing-tool-endpoint="+bad)
		if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "--tracing-tool-endpoint") {
			t.Errorf("%q: got %q, %v; want an error saying %q", bad, ep, err, why)
		}
	}
	if _, err := parse("--tracing-endpoint=jaeger:4317", "--tracing-tool-endpoint=http://user:secret@collector:4318"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("the password must not reach the log: %v", err)
	}
	if _, err := parse("--tracing-tool-endpoint=http://collector:4318"); err == nil || !strings.Contains(err.Error(), "needs --tracing-endpoint") {
		t.Errorf("a tool endpoint without tracing: %v", err)
	}
}
