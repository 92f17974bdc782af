package controllers

import (
	"context"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// VisibleTool is one tool a scope sees, with the object behind it: what the CLI's
// `tools` command and the MCP gateway's tools/list show.
type VisibleTool struct {
	// Name is the model-facing name.
	Name string
	// Kind is Tool or ClusterTool; Object is the object's metadata.name.
	Kind   v1alpha1.ToolKind
	Object string
	// Scope is the ToolScope a namespaced Tool registers in ("" for the namespace layer).
	Scope       string
	Spec        *v1alpha1.ToolSpec
	Annotations map[string]string
}

// Catalog is what a scope sees.
type Catalog struct {
	// Tools is sorted by name.
	Tools []VisibleTool
	// ClusterToolsHidden is set when the reader may not list ClusterTools (an agent bound
	// by a RoleBinding only): Tools then lacks the cluster layer, which the operator
	// still resolves.
	ClusterToolsHidden bool
}

// VisibleTools lists the tools a call in scope of namespace would resolve, with the same
// resolution the operator uses (pipeline.Index.Visible). It reads no ToolPolicies, so the
// toolgate-agent role suffices. An unknown scope or a cycle in its chain is an error
// (*pipeline.ResolveError).
func VisibleTools(ctx context.Context, c client.Reader, namespace, scope string) (*Catalog, error) {
	reg, err := loadIndex(ctx, c, namespace, true)
	if err != nil {
		return nil, err
	}
	regs, err := reg.index.Visible(scope)
	if err != nil {
		return nil, err
	}
	out := make([]VisibleTool, 0, len(regs))
	for _, r := range regs {
		kind, objName, _ := strings.Cut(r.Key, "/")
		v := VisibleTool{Name: r.Name, Kind: v1alpha1.ToolKind(kind), Object: objName}
		if v.Kind == v1alpha1.ToolKindTool {
			t := reg.tools[objName]
			v.Scope, v.Spec, v.Annotations = t.Spec.Scope, &t.Spec.ToolSpec, t.Annotations
		} else {
			t := reg.cluster[objName]
			v.Spec, v.Annotations = &t.Spec, t.Annotations
		}
		out = append(out, v)
	}
	return &Catalog{Tools: out, ClusterToolsHidden: reg.clusterHidden}, nil
}
