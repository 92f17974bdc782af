package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/tracing"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Jaeger runs on the node when the cluster came up with TRACING=1 (hack/jaeger.sh): its
// query API and OTLP/HTTP receiver are on this machine's loopback, and the operator exports
// to it at the node address (the chart's tracing.endpoint).
func jaegerQueryURL() string    { return envOr("JAEGER_QUERY_URL", "http://127.0.0.1:16686") }
func jaegerOTLPHTTPURL() string { return envOr("JAEGER_OTLP_HTTP_URL", "http://127.0.0.1:4318") }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// jaegerSpan is a span as Jaeger's query API (/api/traces/<id>) returns it.
type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"` // µs since the epoch
	Duration  int64 `json:"duration"`  // µs
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

func (s jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// requireTracing skips the spec on a cluster brought up without tracing, unless
// TRACING=1 says it must be there (make test, .ci/run): then its absence fails.
func requireTracing(ctx context.Context) {
	GinkgoHelper()
	why := ""
	if resp, err := http.Get(jaegerQueryURL() + "/api/services"); err != nil {
		why = "Jaeger's query API does not answer at " + jaegerQueryURL() + ": " + err.Error()
	} else {
		_ = resp.Body.Close()
	}
	if why == "" {
		var d appsv1.Deployment
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: release}, &d)).To(Succeed())
		if !strings.Contains(strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "), "--tracing-endpoint=") {
			why = "the operator was installed without tracing.endpoint"
		}
	}
	if why == "" {
		return
	}
	if os.Getenv("TRACING") == "1" {
		Fail("TRACING=1 but " + why)
	}
	Skip(why + " (make up TRACING=1 starts Jaeger and installs the operator with tracing)")
}

// postOTLP sends an OTLP/JSON export request to Jaeger's OTLP/HTTP receiver.
func postOTLP(body any) {
	GinkgoHelper()
	b, err := json.Marshal(body)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.Post(jaegerOTLPHTTPURL()+"/v1/traces", "application/json", bytes.NewReader(b))
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
}

// callerSpan is the OTLP/JSON request of the agent's own span, the call's parent.
func callerSpan(traceID, spanID string, start, end time.Time) map[string]any {
	return map[string]any{"resourceSpans": []any{map[string]any{
		"resource": map[string]any{"attributes": []any{map[string]any{"key": "service.name",
			"value": map[string]any{"stringValue": "e2e-agent"}}}},
		"scopeSpans": []any{map[string]any{"scope": map[string]any{"name": "e2e"}, "spans": []any{map[string]any{
			"traceId": traceID, "spanId": spanID, "name": "agent-request", "kind": 3,
			"startTimeUnixNano": strconv.FormatInt(start.UnixNano(), 10),
			"endTimeUnixNano":   strconv.FormatInt(end.UnixNano(), 10)}}}}}}}
}

func jaegerTrace(traceID string) ([]jaegerSpan, error) {
	resp, err := http.Get(jaegerQueryURL() + "/api/traces/" + traceID)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var out struct {
		Data []struct {
			Spans []jaegerSpan `json:"spans"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if len(out.Data) != 1 {
		return nil, fmt.Errorf("%d traces for %s (HTTP %s)", len(out.Data), traceID, resp.Status)
	}
	return out.Data[0].Spans, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

var _ = Describe("A traced call in Jaeger", Label("tracing"), func() {
	It("is one trace: the caller's span, a span per stage under the call, the body's own span inside the execution", func(ctx SpecContext) {
		requireTracing(ctx)
		traceID, agentSpan := randomHex(16), randomHex(8)
		agentStart := time.Now()
		createTool(ctx, toolgatetest.MakeTool("e2e-tracespan", demoNS).Image(toolImage).RunnerInImage("").
			Command("/tools/tracespan").Timeout(60*time.Second).Obj())
		call := toolgatetest.MakeToolCall("", demoNS).Tool("e2e-tracespan").Requester("agent").
			Args(map[string]any{"millis": 200}).Label(e2eLabel, "true").Obj()
		call.GenerateName = "e2e-trace-"
		call.Annotations = map[string]string{toolgatev1alpha1.AnnotationTraceparent: "00-" + traceID + "-" + agentSpan + "-01"}
		Expect(agent.Create(ctx, call)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })

		done := waitTerminal(ctx, call, callTimeout)
		Expect(done).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", done.Status.Result)
		var body struct {
			Traceparent, TraceID, SpanID, ParentSpanID, ExportError string
			OTLP                                                    map[string]any
		}
		Expect(json.Unmarshal(done.Status.Result.Content.Raw, &body)).To(Succeed())
		Expect(body.TraceID).To(Equal(traceID), "the body's TRACEPARENT is in the caller's trace: %+v", body)
		// The sandbox reaches no address on this machine (toolgate's NetworkPolicies), so
		// the spec posts the span the body made, as the body's collector would have.
		postOTLP(body.OTLP)
		postOTLP(callerSpan(traceID, agentSpan, agentStart, time.Now()))

		want := []string{"agent-request", tracing.SpanCall, tracing.SpanResolve, tracing.SpanFreeze, tracing.SpanValidate,
			tracing.SpanPreExecute, tracing.SpanGuard, tracing.SpanJobStart, tracing.SpanExecute, tracing.SpanNormalize,
			tracing.SpanPostExecute, tracing.SpanFreezeResult, "tool-body"}
		var spans []jaegerSpan
		Eventually(func(g Gomega) {
			var err error
			spans, err = jaegerTrace(traceID)
			g.Expect(err).NotTo(HaveOccurred())
			var names []string
			for _, s := range spans {
				names = append(names, s.OperationName)
			}
			g.Expect(names).To(ConsistOf(want))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())

		by := map[string]jaegerSpan{}
		for _, s := range spans {
			Expect(s.TraceID).To(Equal(traceID))
			by[s.OperationName] = s
		}
		root, exec, tool := by[tracing.SpanCall], by[tracing.SpanExecute], by["tool-body"]
		Expect(by["agent-request"].parent()).To(BeEmpty())
		Expect(root.parent()).To(Equal(agentSpan), "the call's span is the caller's span's child")
		Expect(root.tag(string(tracing.AttrCall))).To(Equal(done.Name))
		Expect(root.tag(string(tracing.AttrPhase))).To(Equal("Succeeded"))
		for _, name := range want[2 : len(want)-1] {
			Expect(by[name].parent()).To(Equal(root.SpanID), "%s is a stage of the call", name)
		}
		Expect(exec.tag(string(tracing.AttrAttempt))).To(Equal("1"))
		Expect(tool.parent()).To(Equal(exec.SpanID), "the body's span is the execution span's child")
		Expect(tool.SpanID).To(Equal(body.SpanID))
		Expect(tool.StartTime).To(BeNumerically(">=", exec.StartTime), "the body's span starts inside the execution span")
		Expect(tool.StartTime+tool.Duration).To(BeNumerically("<=", exec.StartTime+exec.Duration), "and ends inside it")
		AddReportEntry("trace", fmt.Sprintf("%s/trace/%s: %d spans", jaegerQueryURL(), traceID, len(spans)))
	}, SpecTimeout(3*time.Minute))
})
