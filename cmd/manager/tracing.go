package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/tracing"
)

// tracingFlags are the --tracing-* flags: the operator's exporter, and the collector the
// tool bodies are pointed at.
type tracingFlags struct {
	tracing.Options
	toolEndpoint string
}

// bindTracing binds the --tracing-* flags. Without --tracing-endpoint the operator traces
// nothing (a nil tracer: no exporter, no spans).
func bindTracing(fs *flag.FlagSet) *tracingFlags {
	o := &tracingFlags{}
	fs.StringVar(&o.Endpoint, "tracing-endpoint", "", "OTLP receiver (host:port) to export a trace of every ToolCall to; empty: no tracing")
	fs.StringVar(&o.Protocol, "tracing-protocol", "grpc", "OTLP protocol: grpc or http (protobuf over HTTP)")
	fs.BoolVar(&o.Insecure, "tracing-insecure", false, "send OTLP in plaintext instead of TLS")
	fs.StringVar(&o.ServiceName, "tracing-service-name", "toolgate", "service.name of the operator's spans")
	fs.DurationVar(&o.BatchTimeout, "tracing-batch-timeout", 2*time.Second, "longest a finished span waits before it is sent")
	fs.StringVar(&o.toolEndpoint, "tracing-tool-endpoint", "", "OTLP/HTTP base URL (http:// or https://) handed to every tool body as OTEL_EXPORTER_OTLP_ENDPOINT, "+
		"so that it exports its own spans under TRACEPARENT; needs --tracing-endpoint; a body reaches it only if its NetworkPolicies allow; empty: none")
	return o
}

// toolOTLPEndpoint is the validated --tracing-tool-endpoint: empty, or an http(s) base URL
// (the SDKs append /v1/traces) with a host, without credentials, query or fragment (every
// tool Pod's spec shows it), given only when the operator traces.
func (o *tracingFlags) toolOTLPEndpoint() (string, error) {
	raw := o.toolEndpoint
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	shown := raw
	if err == nil && u.User != nil {
		shown = u.Redacted() // the error goes to the log
	}
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("--tracing-tool-endpoint %q: %s", shown, why)
	}
	switch {
	case o.Endpoint == "":
		return bad("needs --tracing-endpoint: without the operator's trace there is no TRACEPARENT to continue")
	case err != nil:
		return bad(errors.Unwrap(err).Error())
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("want an http:// or https:// URL (OTLP/HTTP, e.g. http://otel-collector.example:4318)")
	case u.Hostname() == "":
		return bad("no host")
	case u.User != nil:
		return bad("no credentials in the URL: every tool Pod's spec shows it")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return bad("no query or fragment: it is a base URL")
	case strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1/traces"):
		return bad("a base URL: the SDKs append /v1/traces themselves")
	}
	return raw, nil
}

// shutdownTracer sends what the tracer still holds, within a few seconds.
func shutdownTracer(t *tracing.Tracer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return t.Shutdown(ctx)
}
