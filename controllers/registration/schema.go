// Package registration holds the reconcilers that check what the platform declares before
// any call uses it: Tools and ClusterTools (registered by one registrar: resolved name, spec
// digest, schemas, duplicates), ToolScopes (their parent chain) and ToolPolicies (their CEL
// rules). They write the objects' status and warning events only; the ToolCall reconciler
// (controllers) reads what they decide.
package registration

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/toolgate/toolgate/pipeline"
)

// IndexToolName indexes Tools by their resolved (model-facing) name, so that the Tool
// controller compares a Tool with its namesakes only, not with every Tool of the
// namespace (which made registering thousands of Tools quadratic). The manager's indexes
// (controllers) register it; the Tool reconciler lists by it.
const IndexToolName = "toolgate.dev/tool-name"

// CompileSchema compiles an optional schema: an absent one is nil (any value passes).
func CompileSchema(c *pipeline.Compiler, raw []byte) (*pipeline.Schema, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return c.CompileSchema(raw)
}

// RawOf returns the bytes of an optional raw JSON field (nil when absent).
func RawOf(ext *runtime.RawExtension) []byte {
	if ext == nil {
		return nil
	}
	return ext.Raw
}
