package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/catalog"
)

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

// wire is the JSON a client receives for v.
func wire(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return m
}

func TestToolFor(t *testing.T) {
	cases := []struct {
		name    string
		tool    catalog.VisibleTool
		want    string
		wantErr string
	}{{
		name: "no parameters: any object; not read-only: no destructive or idempotent claim",
		tool: catalog.VisibleTool{Name: "deploy", Spec: &v1alpha1.ToolSpec{Description: "Deploys."}},
		want: `{"name":"deploy","description":"Deploys.","inputSchema":{"type":"object"},
			"annotations":{"readOnlyHint":false,"idempotentHint":false,"openWorldHint":false}}`,
	}, {
		name: "parameters, output, read-only, egress, title annotation",
		tool: catalog.VisibleTool{
			Name:        "grep",
			Annotations: map[string]string{AnnotationTitle: "Search files"},
			Spec: &v1alpha1.ToolSpec{
				Description: "Searches.",
				Parameters:  raw(`{"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}`),
				Output:      raw(`{"type": "object", "properties": {"matches": {"type": "integer"}}}`),
				ReadOnly:    true,
				Sandbox:     v1alpha1.Sandbox{Network: v1alpha1.NetworkEgress},
			},
		},
		want: `{"name":"grep","title":"Search files","description":"Searches.",
			"inputSchema":{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"]},
			"outputSchema":{"type":"object","properties":{"matches":{"type":"integer"}}},
			"annotations":{"title":"Search files","readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":true}}`,
	}, {
		name: "a schema without type is served as an object schema",
		tool: catalog.VisibleTool{Name: "x", Spec: &v1alpha1.ToolSpec{Parameters: raw(`{"properties":{"a":{"type":"string"}}}`)}},
		want: `{"name":"x","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}},
			"annotations":{"readOnlyHint":false,"idempotentHint":false,"openWorldHint":false}}`,
	}, {
		name: "a type list with object becomes object",
		tool: catalog.VisibleTool{Name: "x", Spec: &v1alpha1.ToolSpec{Parameters: raw(`{"type":["object","null"]}`)}},
		want: `{"name":"x","inputSchema":{"type":"object"},
			"annotations":{"readOnlyHint":false,"idempotentHint":false,"openWorldHint":false}}`,
	}, {
		name:    "a schema that admits no object is refused",
		tool:    catalog.VisibleTool{Name: "x", Spec: &v1alpha1.ToolSpec{Parameters: raw(`{"type":"string"}`)}},
		wantErr: "the arguments of a call are always an object",
	}, {
		name:    "parameters that are not a schema object are refused",
		tool:    catalog.VisibleTool{Name: "x", Spec: &v1alpha1.ToolSpec{Parameters: raw(`[1]`)}},
		wantErr: "not a JSON Schema object",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ToolFor(tc.tool)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ToolFor: %v", err)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatalf("bad want: %v", err)
			}
			if diff := cmp.Diff(want, wire(t, got)); diff != "" {
				t.Errorf("tool (-want +got):\n%s", diff)
			}
		})
	}
}

func finished(phase v1alpha1.ToolCallPhase, r *v1alpha1.ToolResult) *v1alpha1.ToolCall {
	call := &v1alpha1.ToolCall{}
	call.Name, call.Namespace = "grep-x1", "agents"
	call.Spec.Tool = "grep"
	call.Status.Phase, call.Status.Result = phase, r
	return call
}

func content(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

func TestResultFor(t *testing.T) {
	meta := func(phase, reason string) map[string]any {
		m := map[string]any{MetaCall: "grep-x1", MetaNamespace: "agents", MetaPhase: phase}
		if reason != "" {
			m[MetaReason] = reason
		}
		return m
	}
	cases := []struct {
		name string
		call *v1alpha1.ToolCall
		want map[string]any
	}{{
		name: "object content: compact text and structuredContent",
		call: finished(v1alpha1.PhaseSucceeded, &v1alpha1.ToolResult{OK: true, Reason: "Succeeded", Content: content(`{ "matches": 3 }`)}),
		want: map[string]any{
			"content":           []any{map[string]any{"type": "text", "text": `{"matches":3}`}},
			"structuredContent": map[string]any{"matches": 3.0},
			"_meta":             meta("Succeeded", "Succeeded"),
		},
	}, {
		name: "string content is the text itself; no structuredContent",
		call: finished(v1alpha1.PhaseSucceeded, &v1alpha1.ToolResult{OK: true, Content: content(`"hello\nworld"`), Meta: map[string]string{"outputBytes": "11"}}),
		want: map[string]any{
			"content": []any{map[string]any{"type": "text", "text": "hello\nworld"}},
			"_meta":   mergeMeta(meta("Succeeded", ""), MetaResult, map[string]any{"outputBytes": "11"}),
		},
	}, {
		name: "array content: compact JSON text, no structuredContent",
		call: finished(v1alpha1.PhaseSucceeded, &v1alpha1.ToolResult{OK: true, Content: content(`[1, 2]`)}),
		want: map[string]any{
			"content": []any{map[string]any{"type": "text", "text": `[1,2]`}},
			"_meta":   meta("Succeeded", ""),
		},
	}, {
		name: "no content: an empty text item",
		call: finished(v1alpha1.PhaseSucceeded, &v1alpha1.ToolResult{OK: true}),
		want: map[string]any{
			"content": []any{map[string]any{"type": "text", "text": ""}},
			"_meta":   meta("Succeeded", ""),
		},
	}, {
		name: "error result: the error message, isError, no structuredContent even for an object",
		call: finished(v1alpha1.PhaseFailed, &v1alpha1.ToolResult{IsError: true, Reason: "ToolError", Error: "disk full", Content: content(`{"isError":true,"error":"disk full"}`)}),
		want: map[string]any{
			"content": []any{map[string]any{"type": "text", "text": "disk full"}},
			"isError": true,
			"_meta":   meta("Failed", "ToolError"),
		},
	}, {
		name: "denied is an error even if the result says otherwise",
		call: finished(v1alpha1.PhaseDenied, &v1alpha1.ToolResult{Reason: "PolicyDenied", Content: content(`"no prod"`)}),
		want: map[string]any{
			"content": []any{map[string]any{"type": "text", "text": "no prod"}},
			"isError": true,
			"_meta":   meta("Denied", "PolicyDenied"),
		},
	}, {
		name: "an error without message or content says so",
		call: finished(v1alpha1.PhaseFailed, &v1alpha1.ToolResult{IsError: true, Reason: "Weird"}),
		want: map[string]any{
			"content": []any{map[string]any{"type": "text", "text": `the call grep-x1 ended in phase Failed without a message (reason "Weird")`}},
			"isError": true,
			"_meta":   meta("Failed", "Weird"),
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, wire(t, ResultFor(tc.call))); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func mergeMeta(m map[string]any, k string, v any) map[string]any {
	m[k] = v
	return m
}

func TestParkedAndRunningResults(t *testing.T) {
	call := finished(v1alpha1.PhaseAwaitingApproval, nil)
	cases := []struct {
		name string
		res  *mcp.CallToolResult
		want []string
	}{
		{"awaiting approval", AwaitingApprovalResult(call), []string{"awaits human approval", "grep-x1", "toolgate approve grep-x1 -n agents"}},
		{"still running", StillRunningResult(call, 0), []string{"still running", "grep-x1", "not cancelled"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.res.IsError {
				t.Error("isError = false, want true")
			}
			text := tc.res.Content[0].(*mcp.TextContent).Text
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("text %q lacks %q", text, w)
				}
			}
			if tc.res.Meta[MetaCall] != "grep-x1" {
				t.Errorf("_meta %v lacks the call name", tc.res.Meta)
			}
		})
	}
}
