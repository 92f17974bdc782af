package main

import (
	"context"
	"flag"
	"time"

	"github.com/toolgate/toolgate/internal/tracing"
)

// bindTracing binds the --tracing-* flags. Without --tracing-endpoint the operator traces
// nothing (a nil tracer: no exporter, no spans).
func bindTracing(fs *flag.FlagSet) *tracing.Options {
	o := &tracing.Options{}
	fs.StringVar(&o.Endpoint, "tracing-endpoint", "", "OTLP receiver (host:port) to export a trace of every ToolCall to; empty: no tracing")
	fs.StringVar(&o.Protocol, "tracing-protocol", "grpc", "OTLP protocol: grpc or http (protobuf over HTTP)")
	fs.BoolVar(&o.Insecure, "tracing-insecure", false, "send OTLP in plaintext instead of TLS")
	fs.StringVar(&o.ServiceName, "tracing-service-name", "toolgate", "service.name of the operator's spans")
	fs.DurationVar(&o.BatchTimeout, "tracing-batch-timeout", 2*time.Second, "longest a finished span waits before it is sent")
	return o
}

// shutdownTracer sends what the tracer still holds, within a few seconds.
func shutdownTracer(t *tracing.Tracer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return t.Shutdown(ctx)
}
