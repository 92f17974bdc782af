package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// AnnotationTitle on a Tool or ClusterTool is the tool's human-readable MCP title (the spec
// has no title field: it is for people, not for the model or the pipeline).
const AnnotationTitle = "toolgate.dev/title"

// Keys of the _meta the gateway puts on every result it makes from a ToolCall.
const (
	MetaCall      = "toolgate.dev/call"
	MetaNamespace = "toolgate.dev/namespace"
	MetaPhase     = "toolgate.dev/phase"
	MetaReason    = "toolgate.dev/reason"
	// MetaResult holds the result's own meta (output size, truncation, exit code).
	MetaResult = "toolgate.dev/result-meta"
)

// ToolFor is the MCP tool a visible toolgate tool is served as: the name the model sees,
// the description, the parameters as inputSchema (any object when absent), the output
// schema, and hints from readOnly and the sandbox's network.
func ToolFor(vt catalog.VisibleTool) (*mcp.Tool, error) {
	spec := vt.Spec
	if spec == nil {
		return nil, fmt.Errorf("tool %q has no spec", vt.Name)
	}
	in, err := inputSchema(spec.Parameters)
	if err != nil {
		return nil, fmt.Errorf("tool %q: parameters: %w", vt.Name, err)
	}
	title := vt.Annotations[AnnotationTitle]
	t := &mcp.Tool{
		Name:        vt.Name,
		Title:       title,
		Description: spec.Description,
		InputSchema: in,
		Annotations: &mcp.ToolAnnotations{
			Title:          title,
			ReadOnlyHint:   spec.ReadOnly,
			IdempotentHint: spec.ReadOnly,
			OpenWorldHint:  ptr.To(spec.Sandbox.Network == v1alpha1.NetworkEgress),
		},
	}
	if spec.ReadOnly {
		t.Annotations.DestructiveHint = ptr.To(false)
	}
	if spec.Output != nil && len(spec.Output.Raw) > 0 {
		out, err := compactJSON(spec.Output.Raw)
		if err != nil {
			return nil, fmt.Errorf("tool %q: output: %w", vt.Name, err)
		}
		t.OutputSchema = out
	}
	return t, nil
}

// inputSchema returns the parameters schema as MCP wants it: a JSON object with
// "type": "object". A call's arguments are always an object, so a schema without a type
// (or with a type list that includes "object") is served with "type": "object"; a schema
// that admits no object cannot be called and is refused.
func inputSchema(params *runtime.RawExtension) (json.RawMessage, error) {
	if params == nil || len(bytes.TrimSpace(params.Raw)) == 0 || string(bytes.TrimSpace(params.Raw)) == "true" {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var schema map[string]json.RawMessage
	if err := json.Unmarshal(params.Raw, &schema); err != nil || schema == nil {
		return nil, errors.New("not a JSON Schema object")
	}
	switch typ := schema["type"]; {
	case typ == nil:
	case string(typ) == `"object"`:
		return compactJSON(params.Raw)
	default:
		var types []string
		if json.Unmarshal(typ, &types) != nil || !slices.Contains(types, "object") {
			return nil, fmt.Errorf(`type is %s: the arguments of a call are always an object`, typ)
		}
	}
	schema["type"] = json.RawMessage(`"object"`)
	return json.Marshal(schema)
}

func compactJSON(raw []byte) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
