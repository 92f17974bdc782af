// Package gateway serves the tools a toolgate scope sees over the Model Context Protocol:
// tools/list is the scope's catalog, and each tools/call becomes a ToolCall whose frozen
// result is returned as the MCP result.
package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/pkg/agentclient"
)

// DefaultWaitBound is how long a tools/call waits for a result when Options.WaitBound is 0.
const DefaultWaitBound = 5 * time.Minute

// Options configure a Gateway.
type Options struct {
	// Client carries the namespace and the identity calls are made as.
	Client *agentclient.Client
	// Scope is the ToolScope whose visible tools are served ("" = the namespace layer).
	Scope string
	// Session, when set, is the spec.session of every call.
	Session string
	// WaitBound is how long tools/call waits for a result (DefaultWaitBound when 0).
	WaitBound time.Duration
	// Logger receives one line per call and the catalog refreshes.
	Logger logr.Logger
}

// Gateway is an MCP server backed by toolgate.
type Gateway struct {
	opts   Options
	server *mcp.Server
}

// New loads the scope's tools and starts watching Tools, ClusterTools and ToolScopes
// until ctx ends.
func New(ctx context.Context, opts Options) (*Gateway, error) {
	if opts.Client == nil {
		return nil, errors.New("gateway: Options.Client is required")
	}
	if opts.WaitBound <= 0 {
		opts.WaitBound = DefaultWaitBound
	}
	g := &Gateway{opts: opts}
	g.server = mcp.NewServer(&mcp.Implementation{Name: "toolgate"}, nil)
	return g, nil
}

// Server is the underlying MCP server.
func (g *Gateway) Server() *mcp.Server { return g.server }

// ServeStdio serves one client over stdin/stdout until ctx ends or the client leaves.
func (g *Gateway) ServeStdio(ctx context.Context) error {
	return g.server.Run(ctx, &mcp.StdioTransport{})
}

// HTTPHandler serves clients over the streamable HTTP transport.
func (g *Gateway) HTTPHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server }, nil)
}

// Serve runs a gateway: over stdio when httpAddr is "", else over streamable HTTP on
// httpAddr, until ctx ends.
func Serve(ctx context.Context, opts Options, httpAddr string) error {
	g, err := New(ctx, opts)
	if err != nil {
		return err
	}
	if httpAddr == "" {
		return g.ServeStdio(ctx)
	}
	return errors.New("not implemented yet")
}
