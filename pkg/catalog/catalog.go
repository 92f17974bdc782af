// Package catalog lists the tools a ToolScope makes visible, with the resolution the
// operator uses (pipeline.Index): what the CLI's `tools` command and the MCP gateway's
// tools/list show. It reads through the caller's own API access and imports nothing of
// the operator, so that clients (pkg/agentclient) stay small.
package catalog

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"k8s.io/utils/ptr"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
)

// VisibleTool is one tool a scope sees, with the object behind it.
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
	// Generation is the object's metadata.generation.
	Generation int64
}

// Catalog is what a scope sees.
type Catalog struct {
	// Tools is sorted by name.
	Tools []VisibleTool
	// ClusterToolsHidden is set when the reader may not list ClusterTools (an agent bound
	// by a RoleBinding only): Tools then lacks the cluster layer, which the operator
	// still resolves.
	ClusterToolsHidden bool
	// NotASubject is set when the requester asked about is not a subject of the scope:
	// every call would be denied (NotASubject), so Tools is empty.
	NotASubject bool
}

// VisibleTools lists the tools a call in scope of namespace would resolve ("" is the
// namespace layer), sorted by name. It reads no ToolPolicies, so the toolgate-agent role
// suffices. When requester is not "", a requester who is not a subject of the scope sees
// no tools (Catalog.NotASubject). An unknown scope or a cycle in its chain is an error
// (*pipeline.ResolveError).
func VisibleTools(ctx context.Context, c client.Reader, namespace, scope, requester string) (*Catalog, error) {
	l, err := Fetch(ctx, c, namespace, true)
	if err != nil {
		return nil, err
	}
	idx, objects := l.Index()
	regs, err := idx.Visible(scope)
	if err != nil {
		return nil, err
	}
	if requester != "" {
		if ok, err := idx.IsSubject(scope, requester); err != nil {
			return nil, err
		} else if !ok {
			return &Catalog{Tools: []VisibleTool{}, ClusterToolsHidden: l.ClusterHidden, NotASubject: true}, nil
		}
	}
	out := make([]VisibleTool, 0, len(regs))
	for _, r := range regs {
		out = append(out, objects.Lookup(r))
	}
	return &Catalog{Tools: out, ClusterToolsHidden: l.ClusterHidden}, nil
}

// Objects are the objects behind an index's registrations, by metadata.name.
type Objects struct {
	Tools   map[string]*v1alpha1.Tool
	Cluster map[string]*v1alpha1.ClusterTool
}

// Lookup is the tool behind r, a registration of the index these objects were indexed
// with (Lists.Index), found by its Key.
func (o Objects) Lookup(r pipeline.Registration) VisibleTool {
	kind, objName, _ := strings.Cut(r.Key, "/")
	v := VisibleTool{Name: r.Name, Kind: v1alpha1.ToolKind(kind), Object: objName}
	if v.Kind == v1alpha1.ToolKindTool {
		t := o.Tools[objName]
		v.Scope, v.Spec, v.Annotations, v.Generation = t.Spec.Scope, &t.Spec.ToolSpec, t.Annotations, t.Generation
	} else {
		t := o.Cluster[objName]
		v.Spec, v.Annotations, v.Generation = &t.Spec, t.Annotations, t.Generation
	}
	return v
}

// Lists is what an index is built from: one namespace's Tools and ToolScopes and every
// ClusterTool.
type Lists struct {
	Tools   v1alpha1.ToolList
	Cluster v1alpha1.ClusterToolList
	Scopes  v1alpha1.ToolScopeList
	// ClusterHidden is set when the reader may not list ClusterTools and Fetch was asked
	// to go on without them.
	ClusterHidden bool
}

// Fetch runs the three LISTs concurrently; the error reported is the first in a fixed
// order (tools, scopes, cluster tools), so that a caller missing several permissions
// always hears of the same one. With skipForbiddenCluster, a reader that may not list
// ClusterTools gets the lists without them (ClusterHidden) instead of an error.
func Fetch(ctx context.Context, c client.Reader, namespace string, skipForbiddenCluster bool) (*Lists, error) {
	l := &Lists{}
	ns := client.InNamespace(namespace)
	calls := []func() error{
		func() error { return c.List(ctx, &l.Tools, ns) },
		func() error { return c.List(ctx, &l.Scopes, ns) },
		func() error {
			err := c.List(ctx, &l.Cluster)
			if err != nil && skipForbiddenCluster && apierrors.IsForbidden(err) {
				l.ClusterHidden = true
				return nil
			}
			return err
		},
	}
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Go(func() { errs[i] = call() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Index builds the resolution index (objects being deleted are left out) and the objects
// behind it by name.
func (l *Lists) Index() (*pipeline.Index, Objects) {
	tools := map[string]*v1alpha1.Tool{}
	cluster := map[string]*v1alpha1.ClusterTool{}
	var nsRegs, clusterRegs []pipeline.Registration
	for i := range l.Tools.Items {
		t := &l.Tools.Items[i]
		if t.DeletionTimestamp.IsZero() {
			tools[t.Name] = t
			nsRegs = append(nsRegs, ToolRegistration(t))
		}
	}
	for i := range l.Cluster.Items {
		t := &l.Cluster.Items[i]
		if t.DeletionTimestamp.IsZero() {
			cluster[t.Name] = t
			clusterRegs = append(clusterRegs, ClusterToolRegistration(t))
		}
	}
	scopes := make([]pipeline.Scope, 0, len(l.Scopes.Items))
	for i := range l.Scopes.Items {
		scopes = append(scopes, ScopeOf(&l.Scopes.Items[i]))
	}
	return pipeline.NewIndex(clusterRegs, nsRegs, scopes), Objects{Tools: tools, Cluster: cluster}
}

// ToolName is the model-facing name of a tool: spec.name, or metadata.name when empty (as
// the operator resolves it).
func ToolName(spec *v1alpha1.ToolSpec, objectName string) string {
	if spec.Name != "" {
		return spec.Name
	}
	return objectName
}

// SpecDigest is "sha256:<hex>" of the JSON encoding of a tool spec.
func SpecDigest(spec any) string {
	b, err := json.Marshal(spec)
	if err != nil {
		return ""
	}
	return frame.DigestOf(b)
}

// ToolRegistration is a Tool as the resolution index knows it.
func ToolRegistration(t *v1alpha1.Tool) pipeline.Registration {
	return pipeline.Registration{
		Name:       ToolName(&t.Spec.ToolSpec, t.Name),
		Scope:      t.Spec.Scope,
		Key:        string(v1alpha1.ToolKindTool) + "/" + t.Name,
		CreatedAt:  t.CreationTimestamp.Time,
		Ready:      true,
		SpecDigest: SpecDigest(&t.Spec.ToolSpec),
	}
}

// ClusterToolRegistration is a ClusterTool as the resolution index knows it.
func ClusterToolRegistration(t *v1alpha1.ClusterTool) pipeline.Registration {
	return pipeline.Registration{
		Name:       ToolName(&t.Spec, t.Name),
		Key:        string(v1alpha1.ToolKindClusterTool) + "/" + t.Name,
		CreatedAt:  t.CreationTimestamp.Time,
		Ready:      true,
		SpecDigest: SpecDigest(&t.Spec),
	}
}

// ScopeOf is a ToolScope as the resolution index knows it.
func ScopeOf(s *v1alpha1.ToolScope) pipeline.Scope {
	return pipeline.Scope{Name: s.Name, Parent: s.Spec.Parent, Allow: s.Spec.Allow, Deny: s.Spec.Deny, Subjects: s.Spec.Subjects,
		RuntimeClassName: ptr.Deref(s.Spec.RuntimeClassName, "")}
}
