package main

import (
	"context"
	"flag"
	"testing"

	"github.com/toolgate/toolgate/internal/tracing"
)

func TestTracingFlags(t *testing.T) {
	fs := flag.NewFlagSet("m", flag.ContinueOnError)
	o := bindTracing(fs)
	if err := fs.Parse(nil); err != nil || o.Endpoint != "" {
		t.Fatalf("off by default: endpoint %q, err %v", o.Endpoint, err)
	}
	if tr, err := tracing.New(context.Background(), *o); tr != nil || err != nil {
		t.Fatalf("no endpoint: no tracer (%v, %v)", tr, err)
	}
	fs = flag.NewFlagSet("m", flag.ContinueOnError)
	o = bindTracing(fs)
	if err := fs.Parse([]string{"--tracing-endpoint=127.0.0.1:4318", "--tracing-protocol=http", "--tracing-insecure"}); err != nil {
		t.Fatal(err)
	}
	tr, err := tracing.New(context.Background(), *o)
	if err != nil || !tr.Enabled() {
		t.Fatalf("an endpoint makes a tracer: %v", err)
	}
	if err := shutdownTracer(tr); err != nil {
		t.Fatalf("shutdown with nothing to send: %v", err)
	}
}
