// Command tracespan continues the caller's trace from inside a tool Pod: it reads the
// TRACEPARENT the operator hands the body (the attempt's execution span), makes one span
// of its own under it ({"name": "...", "millis": N}: the span's name, default "tool-body",
// and how long it works, default 50), and returns the span as an OTLP/JSON export request
// in its result. With OTEL_EXPORTER_OTLP_ENDPOINT (an OTLP/HTTP base URL: the operator's
// --tracing-tool-endpoint) it also posts that request to <endpoint>/v1/traces itself, as
// OTLP/JSON, and reports whether that worked; a sandbox whose NetworkPolicy lets it not
// reach the collector (sandbox.network None) reports the error instead. The post may take
// up to exportTimeout: TCP's SYN retries (1 s, 3 s, 7 s) then cover a sandbox whose address
// the NetworkPolicy enforcer learns only after the body started (the local cluster's drops
// such a Pod's first packets). Standard library only.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

type args struct {
	Name   string `json:"name"`
	Millis int    `json:"millis"`
}

type report struct {
	Traceparent  string `json:"traceparent"`
	TraceID      string `json:"traceId,omitempty"`
	SpanID       string `json:"spanId,omitempty"`
	ParentSpanID string `json:"parentSpanId,omitempty"`
	Exported     bool   `json:"exported"`
	ExportError  string `json:"exportError,omitempty"`
	// OTLP is the export request (OTLP/JSON) holding the span.
	OTLP any `json:"otlp,omitempty"`
}

// exportTimeout bounds the post to the collector.
const exportTimeout = 10 * time.Second

var traceparentRE = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$`)

func main() { toolio.Main(run) }

func run(raw []byte) (any, error) {
	var a args
	if err := toolio.Decode(raw, &a); err != nil {
		return nil, err
	}
	if a.Name == "" {
		a.Name = "tool-body"
	}
	if a.Millis <= 0 {
		a.Millis = 50
	}
	if a.Millis > 10000 {
		return nil, errors.New("millis must be at most 10000")
	}
	r := report{Traceparent: os.Getenv(podcontract.EnvTraceparent)}
	m := traceparentRE.FindStringSubmatch(r.Traceparent)
	if m == nil {
		r.ExportError = "no valid TRACEPARENT in the environment: the operator does not trace"
		return r, nil
	}
	r.TraceID, r.ParentSpanID = m[1], m[2]
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	r.SpanID = hex.EncodeToString(id)
	start := time.Now()
	time.Sleep(time.Duration(a.Millis) * time.Millisecond) // the body's "work"
	end := time.Now()
	r.OTLP = exportRequest(r, a.Name, start, end)
	if ep := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); ep != "" {
		if err := post(ep, r.OTLP); err != nil {
			r.ExportError = err.Error()
		} else {
			r.Exported = true
		}
	}
	return r, nil
}

// exportRequest is an OTLP/JSON ExportTraceServiceRequest with one span (IDs in hex,
// times as decimal strings of Unix nanoseconds, as OTLP/JSON encodes them).
func exportRequest(r report, name string, start, end time.Time) map[string]any {
	str := func(k, v string) map[string]any {
		return map[string]any{"key": k, "value": map[string]any{"stringValue": v}}
	}
	span := map[string]any{
		"traceId": r.TraceID, "spanId": r.SpanID, "parentSpanId": r.ParentSpanID, "name": name, "kind": 1,
		"startTimeUnixNano": strconv.FormatInt(start.UnixNano(), 10), "endTimeUnixNano": strconv.FormatInt(end.UnixNano(), 10),
		"attributes": []any{str("tool.name", "tracespan")},
	}
	return map[string]any{"resourceSpans": []any{map[string]any{
		"resource":   map[string]any{"attributes": []any{str("service.name", "toolgate-tool")}},
		"scopeSpans": []any{map[string]any{"scope": map[string]any{"name": "tracespan"}, "spans": []any{span}}},
	}}}
}

func post(endpoint string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	c := http.Client{Timeout: exportTimeout}
	resp, err := c.Post(strings.TrimRight(endpoint, "/")+"/v1/traces", "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("OTLP receiver answered %s", resp.Status)
	}
	return nil
}
