package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
