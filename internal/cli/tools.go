package cli

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// clusterHiddenNote is shown when the catalog lacks the ClusterTools the caller may not list.
const clusterHiddenNote = "note: you may not list ClusterTools, so cluster-wide tools are not shown; calls still resolve them"

type toolsOptions struct {
	f      *Factory
	scope  string
	output string
}

// toolView is one tool in `tools -o json|yaml`.
type toolView struct {
	Name            string          `json:"name"`
	Kind            string          `json:"kind"`
	Object          string          `json:"object"`
	Scope           string          `json:"scope,omitempty"`
	Description     string          `json:"description,omitempty"`
	ConcurrencySafe bool            `json:"concurrencySafe"`
	ReadOnly        bool            `json:"readOnly"`
	Parameters      json.RawMessage `json:"parameters,omitempty"`
}

// catalogView is `tools -o json|yaml`.
type catalogView struct {
	Namespace          string     `json:"namespace"`
	Scope              string     `json:"scope,omitempty"`
	Tools              []toolView `json:"tools"`
	ClusterToolsHidden bool       `json:"clusterToolsHidden,omitempty"`
	NotASubject        bool       `json:"notASubject,omitempty"`
}

func newToolsCommand(f *Factory) *cobra.Command {
	o := &toolsOptions{f: f}
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools a call in the namespace (or --scope) can use",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.scope, "scope", "", "the ToolScope to list for (default: the namespace layer)")
	addOutputFlag(cmd, &o.output, outputText, outputJSON, outputYAML)
	return cmd
}

func (o *toolsOptions) run(ctx context.Context) error {
	if err := checkOutput(o.output, outputText, outputJSON, outputYAML); err != nil {
		return err
	}
	c, err := o.f.AgentClient(ctx)
	if err != nil {
		return err
	}
	cat, err := c.Tools(ctx, o.scope)
	var resolve *pipeline.ResolveError
	switch {
	case errors.As(err, &resolve):
		return Usagef("scope %q in namespace %q: %s", o.scope, c.Namespace, resolve.Msg)
	case err != nil:
		return explain(err, apiOp{verb: "list", resource: "tools.toolgate.dev", namespace: c.Namespace})
	}
	if o.output != outputText {
		return printValue(o.f.IO.Out, o.output, viewCatalog(c.Namespace, o.scope, cat))
	}
	if len(cat.Tools) == 0 {
		fprintf(o.f.IO.ErrOut, "No tools are visible in namespace %q%s.\n", c.Namespace, inScope(o.scope))
	} else {
		fprintf(o.f.IO.Out, "%s", toolTable(cat.Tools))
	}
	if cat.ClusterToolsHidden {
		fprintf(o.f.IO.ErrOut, "%s\n", clusterHiddenNote)
	}
	if cat.NotASubject {
		fprintf(o.f.IO.ErrOut, "you are not a subject of scope %q: every call in it would be denied (NotASubject)\n", o.scope)
	}
	return nil
}

func inScope(scope string) string {
	if scope == "" {
		return ""
	}
	return " (scope " + scope + ")"
}

func viewCatalog(ns, scope string, cat *catalog.Catalog) catalogView {
	v := catalogView{Namespace: ns, Scope: scope, Tools: []toolView{}, ClusterToolsHidden: cat.ClusterToolsHidden,
		NotASubject: cat.NotASubject}
	for _, t := range cat.Tools {
		tv := toolView{Name: t.Name, Kind: string(t.Kind), Object: t.Object, Scope: t.Scope,
			Description: t.Spec.Description, ConcurrencySafe: t.Spec.ConcurrencySafe, ReadOnly: t.Spec.ReadOnly}
		if t.Spec.Parameters != nil {
			tv.Parameters = t.Spec.Parameters.Raw
		}
		v.Tools = append(v.Tools, tv)
	}
	return v
}
