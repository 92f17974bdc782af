package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// refresh reads the scope's tools and brings the server's tool set in line: tools that
// appeared or whose MCP form changed are (re)added, vanished ones removed. The SDK sends
// notifications/tools/list_changed for those changes (debounced into one), and for
// nothing else: an unchanged tool is not touched.
func (g *Gateway) refresh(ctx context.Context) error {
	cat, err := g.opts.Client.Tools(ctx, g.opts.Scope)
	var resolveErr *pipeline.ResolveError
	switch {
	case errors.As(err, &resolveErr):
		// The scope is gone or broken: the operator would deny every call in it.
		g.log.Info("The scope resolves no tools", "scope", g.opts.Scope, "reason", resolveErr.Reason, "message", resolveErr.Msg)
		g.apply(nil)
		return nil
	case err != nil:
		return err
	}
	g.serve(cat)
	return nil
}

// serve serves the tools of cat.
func (g *Gateway) serve(cat *catalog.Catalog) {
	if cat.ClusterToolsHidden && !g.clusterHiddenLogged {
		g.clusterHiddenLogged = true
		g.log.Info("Not allowed to list ClusterTools: the cluster layer is not listed (calls still resolve it)")
	}
	if cat.NotASubject && !g.notSubjectLogged {
		g.notSubjectLogged = true
		g.log.Info("Not a subject of the scope: no tools are listed (every call would be denied)", "user", g.opts.Client.Identity)
	}
	tools := make([]*mcp.Tool, 0, len(cat.Tools))
	for _, vt := range cat.Tools {
		t, err := ToolFor(vt)
		if err != nil {
			g.log.Info("Not serving a tool", "tool", vt.Name, "kind", vt.Kind, "object", vt.Object, "reason", err.Error())
			continue
		}
		tools = append(tools, t)
	}
	g.apply(tools)
}

// apply makes tools the served set. It is called by one goroutine at a time (New, then
// the refresh loop).
func (g *Gateway) apply(tools []*mcp.Tool) {
	want := make(map[string][]byte, len(tools))
	var added, changed, removed []string
	for _, t := range tools {
		encoded, err := json.Marshal(t)
		if err != nil {
			g.log.Info("Not serving a tool", "tool", t.Name, "reason", err.Error())
			continue
		}
		old, had := g.served[t.Name]
		if had && bytes.Equal(old, encoded) {
			want[t.Name] = old
			continue
		}
		if err := g.addTool(t); err != nil {
			g.log.Info("Not serving a tool", "tool", t.Name, "reason", err.Error())
			continue
		}
		want[t.Name] = encoded
		if had {
			changed = append(changed, t.Name)
		} else {
			added = append(added, t.Name)
		}
	}
	for name := range g.served {
		if _, ok := want[name]; !ok {
			removed = append(removed, name)
		}
	}
	if len(removed) > 0 {
		g.server.RemoveTools(removed...)
		g.toolsMu.Lock()
		for _, name := range removed {
			delete(g.tools, name)
		}
		g.toolsMu.Unlock()
	}
	g.served = want
	if len(added)+len(changed)+len(removed) > 0 {
		sort.Strings(removed)
		g.log.Info("Tool list changed", "added", added, "changed", changed, "removed", removed, "tools", len(want))
	}
}

// addTool adds (or replaces) a tool. The SDK panics on a schema it cannot serve; one bad
// Tool must not take the gateway down, so that becomes an error.
func (g *Gateway) addTool(t *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the MCP SDK refused the tool: %v", r)
		}
	}()
	g.server.AddTool(t, g.handlerFor(t))
	g.toolsMu.Lock()
	g.tools[t.Name] = t
	g.toolsMu.Unlock()
	return nil
}

// tool is the served tool named name (nil when it is not served: a result is then shown
// as for a tool without an output schema).
func (g *Gateway) tool(name string) *mcp.Tool {
	g.toolsMu.RLock()
	defer g.toolsMu.RUnlock()
	return g.tools[name]
}
