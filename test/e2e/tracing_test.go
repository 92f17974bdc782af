package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
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
		switch {
		case operatorArg(ctx, "--tracing-endpoint") == "":
			why = "the operator was installed without tracing.endpoint"
		case operatorArg(ctx, "--tracing-tool-endpoint") == "":
			why = "the operator was installed without tracing.toolEndpoint (the tools' collector)"
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

// operatorArg is the value of the operator container's flag name ("" without it).
func operatorArg(ctx context.Context, name string) string {
	GinkgoHelper()
	var d appsv1.Deployment
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: release}, &d)).To(Succeed())
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
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

// tracespanReport is the tracespan body's result (cmd/tools/tracespan).
type tracespanReport struct {
	Traceparent  string `json:"traceparent"`
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Exported     bool   `json:"exported"`
	ExportError  string `json:"exportError"`
}

// tracedCall is one call made under a caller span of the spec's own, in a fresh trace.
type tracedCall struct {
	done               *toolgatev1alpha1.ToolCall
	body               tracespanReport
	traceID, agentSpan string
}

// tracespanTool is a tracespan Tool with the network mode given (and a warm pool of size,
// if not 0).
func tracespanTool(ctx context.Context, name string, network toolgatev1alpha1.NetworkMode, pool int32) {
	GinkgoHelper()
	t := toolgatetest.MakeTool(name, demoNS).Image(toolImage).RunnerInImage("").
		Command("/tools/tracespan").Network(network).Timeout(60 * time.Second)
	if pool > 0 {
		t = t.WarmPool(pool, 0)
	}
	createTool(ctx, t.Obj())
	if pool > 0 {
		waitPool(ctx, name, int(pool))
	}
}

// makeTracedCall calls tool with a known traceparent, waits for it to succeed and posts
// the caller's own span to Jaeger (as the agent's exporter would). Only the caller's span
// is the spec's: the operator and the tool body export their own.
func makeTracedCall(ctx context.Context, tool string) tracedCall {
	GinkgoHelper()
	tc := tracedCall{traceID: randomHex(16), agentSpan: randomHex(8)}
	agentStart := time.Now()
	call := toolgatetest.MakeToolCall("", demoNS).Tool(tool).Requester("agent").
		Args(map[string]any{"millis": 200}).Label(e2eLabel, "true").Obj()
	call.GenerateName = "e2e-trace-"
	call.Annotations = map[string]string{toolgatev1alpha1.AnnotationTraceparent: "00-" + tc.traceID + "-" + tc.agentSpan + "-01"}
	Expect(agent.Create(ctx, call)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })
	tc.done = waitTerminal(ctx, call, callTimeout)
	Expect(tc.done).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", tc.done.Status.Result)
	Expect(json.Unmarshal(tc.done.Status.Result.Content.Raw, &tc.body)).To(Succeed())
	Expect(tc.body.TraceID).To(Equal(tc.traceID), "the body's TRACEPARENT is in the caller's trace: %+v", tc.body)
	postOTLP(callerSpan(tc.traceID, tc.agentSpan, agentStart, time.Now()))
	return tc
}

// waitSpans waits until the names of the trace's spans in Jaeger match, and returns the
// spans by name.
func waitSpans(ctx context.Context, traceID string, names types.GomegaMatcher) map[string]jaegerSpan {
	GinkgoHelper()
	var spans []jaegerSpan
	Eventually(func(g Gomega) {
		var err error
		spans, err = jaegerTrace(traceID)
		g.Expect(err).NotTo(HaveOccurred())
		var got []string
		for _, s := range spans {
			got = append(got, s.OperationName)
		}
		g.Expect(got).To(names)
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	by := map[string]jaegerSpan{}
	for _, s := range spans {
		Expect(s.TraceID).To(Equal(traceID))
		Expect(by).NotTo(HaveKey(s.OperationName), "two %s spans", s.OperationName)
		by[s.OperationName] = s
	}
	AddReportEntry("trace", fmt.Sprintf("%s/trace/%s: %d spans", jaegerQueryURL(), traceID, len(spans)))
	return by
}

// expectBodyInExecution: the body's own span, which it exported itself, is the execution
// span's child and lies inside it.
func expectBodyInExecution(by map[string]jaegerSpan, tc tracedCall) {
	GinkgoHelper()
	exec, tool := by[tracing.SpanExecute], by[bodySpan]
	Expect(exec.tag(string(tracing.AttrAttempt))).To(Equal("1"))
	Expect(tool.SpanID).To(Equal(tc.body.SpanID))
	Expect(tool.parent()).To(Equal(exec.SpanID), "the body's span is the execution span's child")
	Expect(tool.StartTime).To(BeNumerically(">=", exec.StartTime), "the body's span starts inside the execution span")
	Expect(tool.StartTime+tool.Duration).To(BeNumerically("<=", exec.StartTime+exec.Duration), "and ends inside it")
}

// bodySpan is the name of the tracespan body's span.
const bodySpan = "tool-body"

var _ = Describe("A traced call in Jaeger", Label("tracing"), func() {
	It("is one trace: the caller's span, a span per stage under the call, the body's own exported span inside the execution", func(ctx SpecContext) {
		requireTracing(ctx)
		tracespanTool(ctx, "e2e-tracespan", toolgatev1alpha1.NetworkEgress, 0)
		tc := makeTracedCall(ctx, "e2e-tracespan")
		// The Egress sandbox reaches the tools' collector address (tracing.toolEndpoint,
		// outside the egress policy's except ranges), so the body exports its span itself.
		Expect(tc.body.Exported).To(BeTrue(), "the body posts its span to %s: %+v", operatorArg(ctx, "--tracing-tool-endpoint"), tc.body)

		want := []string{"agent-request", tracing.SpanCall, tracing.SpanResolve, tracing.SpanFreeze, tracing.SpanValidate,
			tracing.SpanPreExecute, tracing.SpanGuard, tracing.SpanJobStart, tracing.SpanExecute, tracing.SpanNormalize,
			tracing.SpanPostExecute, tracing.SpanFreezeResult, bodySpan}
		by := waitSpans(ctx, tc.traceID, ConsistOf(want))
		root := by[tracing.SpanCall]
		Expect(by["agent-request"].parent()).To(BeEmpty())
		Expect(root.parent()).To(Equal(tc.agentSpan), "the call's span is the caller's span's child")
		Expect(root.tag(string(tracing.AttrCall))).To(Equal(tc.done.Name))
		Expect(root.tag(string(tracing.AttrPhase))).To(Equal("Succeeded"))
		for _, name := range want[2 : len(want)-1] {
			Expect(by[name].parent()).To(Equal(root.SpanID), "%s is a stage of the call", name)
		}
		expectBodyInExecution(by, tc)
	}, SpecTimeout(3*time.Minute))

	It("a network None body cannot export: its NetworkPolicy drops the connection, and its span is not in Jaeger", func(ctx SpecContext) {
		requireTracing(ctx)
		tracespanTool(ctx, "e2e-tracespan-none", toolgatev1alpha1.NetworkNone, 0)
		tc := makeTracedCall(ctx, "e2e-tracespan-none")
		// Same endpoint, same route as the Egress spec: only the deny-all policy differs,
		// and it drops the packets (a timeout, not a refusal or an unreachable network).
		Expect(tc.body.Exported).To(BeFalse(), "%+v", tc.body)
		Expect(tc.body.ExportError).To(MatchRegexp(`(?i)timeout`), "%+v", tc.body)
		AddReportEntry("the None body's exportError", tc.body.ExportError)
		Expect(tc.body.Traceparent).NotTo(BeEmpty())
		// The root span is exported only after the terminal write, so after the body had
		// given up: once it is in Jaeger, a span the body had managed to send would be too.
		by := waitSpans(ctx, tc.traceID, ContainElements("agent-request", tracing.SpanCall, tracing.SpanExecute, tracing.SpanFreezeResult))
		Expect(by).NotTo(HaveKey(bodySpan), "a None sandbox exported its span")
	}, SpecTimeout(3*time.Minute))

	It("the tools' collector address opens its OTLP port to an Egress tool and nothing else", Label("networkpolicy"), func(ctx SpecContext) {
		requireTracing(ctx)
		// make up TRACING=1 puts the address on this machine (hack/jaeger/address.sh), which
		// also serves the API server on :6443 of every address: only :4318 may answer.
		u, err := url.Parse(operatorArg(ctx, "--tracing-tool-endpoint"))
		Expect(err).NotTo(HaveOccurred())
		otlp, api := u.Host, net.JoinHostPort(u.Hostname(), "6443")
		other := hostListener(u.Hostname())
		probeTool(ctx, "e2e-otlp-probe", toolgatev1alpha1.NetworkEgress)
		// The OTLP port last: the first probe may start before the enforcer knows the Pod.
		res := probeThroughTool(ctx, "e2e-otlp-probe", api, other, otlp)
		Expect(res).To(Equal(map[string]bool{api: false, other: false, otlp: true}))
	}, SpecTimeout(3*time.Minute))

	It("a warm Pod's body gets the tool endpoint too and exports its span inside the execution", Label("warm"), func(ctx SpecContext) {
		requireTracing(ctx)
		tracespanTool(ctx, "e2e-tracespan-warm", toolgatev1alpha1.NetworkEgress, 1)
		tc := makeTracedCall(ctx, "e2e-tracespan-warm")
		Expect(tc.done.Status.Attempts).To(HaveLen(1))
		Expect(tc.done.Status.Attempts[0].Path).To(Equal(toolgatev1alpha1.PathWarm), "the call ran cold: %+v", tc.done.Status.Attempts[0])
		Expect(tc.body.Exported).To(BeTrue(), "%+v", tc.body)
		by := waitSpans(ctx, tc.traceID, ContainElements("agent-request", tracing.SpanCall, tracing.SpanExecute, tracing.SpanFreezeResult, bodySpan))
		Expect(by[tracing.SpanCall].parent()).To(Equal(tc.agentSpan))
		Expect(by[tracing.SpanExecute].parent()).To(Equal(by[tracing.SpanCall].SpanID))
		expectBodyInExecution(by, tc)
	}, SpecTimeout(3*time.Minute))
})
