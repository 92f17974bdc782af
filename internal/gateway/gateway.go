// Package gateway serves the tools a toolgate scope sees over the Model Context Protocol:
// tools/list is the scope's catalog, kept current by watching Tools, ClusterTools and
// ToolScopes, and each tools/call becomes a ToolCall whose frozen result is returned as
// the MCP result.
//
// Semantics a client can rely on:
//   - An unknown tool name is a JSON-RPC error (-32602, invalid params), as the MCP
//     specification and the SDK have it; everything the operator decides (schema
//     violations, policy denials, tool failures) is a result with isError.
//   - A failure's text is its message and, for an object, its fields (exitCode, stdout,
//     stderr first), bounded and escaped (pkg/display); the object is structuredContent
//     unless the tool declares an output schema (ResultFor).
//   - Every result's _meta names toolgate.dev/phase and toolgate.dev/reason. The gateway's
//     own answers have reasons no call result has (Reason* constants); those made without
//     a ToolCall (limits, arguments that are not an object, a create the API server
//     refused as invalid or forbidden) have phase Refused. Nothing queues in the gateway.
//   - A call a policy parks for approval returns at once with isError, the call's name and
//     the `toolgate approve` command; the call stays and runs if a person approves it.
//   - A call without a result within WaitBound returns isError "still running" with the
//     call's name; it is not cancelled. A request with a progressToken gets
//     notifications/progress on each phase change and every ProgressInterval meanwhile.
//   - A client of MCP Tasks (the 2025-11-25 form, params.task; or the 2026-07-28 extension)
//     gets a task instead: its id is the call's name and uid, its state the call's, and
//     every task method reads the call as the caller and answers only for the caller's own
//     calls, so any replica answers it (tasks.go, taskmethods.go, taskwire.go).
//   - A retry of a parked, or approved and unfinished, call (same tool, arguments, scope,
//     session, requester) returns that call instead of making another (dedupe.go).
//   - Over HTTP (NewHTTP) every request carries a bearer token reviewed by the API server
//     for one audience, and the gateway acts as its identity (impersonation), one Gateway
//     per user (every token of a ServiceAccount is one user, with one set of limits), each
//     call as the very token that asked; sessions are bound to the user who created them.
//   - A request the client cancels before the result cancels its ToolCall (spec.cancel, as
//     the caller: the operator stops the Job and ends the call Failed/Cancelled, and the
//     record stays), so a departed agent leaves no work behind (this needs the patch verb
//     on toolcalls, and the caller to be the call's requester). Cancelling is
//     notifications/cancelled, the end of stdio or of an HTTP session (a DELETE cancels the
//     session's calls at once), or, in the stateless
//     protocol, closing the request's POST; stopping the gateway cancels every call in
//     flight.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/pkg/agentclient"
)

// DefaultWaitBound is how long a tools/call waits for a result when Options.WaitBound is 0.
const DefaultWaitBound = 5 * time.Minute

// Version is the gateway's MCP implementation version.
const Version = "v1alpha1"

// Options configure a Gateway.
type Options struct {
	// Client carries the namespace and the identity calls are made as.
	Client *agentclient.Client
	// Scope is the ToolScope whose visible tools are served ("" = the namespace layer).
	Scope string
	// Session, when set, is the spec.session of every call.
	Session string
	// SessionPerClient gives each client session its own spec.session (sessionFor): an
	// MCP session, or a key the client sends in _meta. Not with Session.
	SessionPerClient bool
	// WaitBound is how long tools/call waits for a result (DefaultWaitBound when 0).
	WaitBound time.Duration
	// Logger receives one line per call and one per change of the tool list.
	Logger logr.Logger
	// MaxCalls bounds the tools/calls in flight at once (0: no bound); a call beyond it is
	// answered at once with isError.
	MaxCalls int
	// MaxParked bounds the calls left awaiting approval (0: no bound): a parked call's
	// tools/call has returned, so MaxCalls does not count it. A call beyond it is answered
	// at once with isError, and no ToolCall is created.
	MaxParked int

	// ProgressInterval is how often a request that waits on a call and carries a
	// progressToken gets notifications/progress while nothing changes (10 s when 0).
	ProgressInterval time.Duration

	// limits, when set, are shared with the user's other gateways (NewHTTP); callers make
	// the per-token clients of an authenticated request.
	limits  *limits
	callers *callers
}

// Gateway is an MCP server backed by toolgate.
type Gateway struct {
	opts   Options
	log    logr.Logger
	server *mcp.Server
	// ctx is New's: when it ends, calls still in flight are cancelled (spec.cancel).
	ctx context.Context
	// calls counts the tools/calls in flight, so that Serve returns after their cleanup.
	calls sync.WaitGroup
	// served is each served tool's MCP form as JSON, to tell a change from a no-op; only
	// the goroutine that refreshes touches it.
	served              map[string][]byte
	clusterHiddenLogged bool
	notSubjectLogged    bool
	// inFlight are the calls in flight by session; limits bound them and the parked ones.
	inFlight inFlight
	limits   *limits
	// tools are the served tools by name, for the results of tasks.
	toolsMu sync.RWMutex
	tools   map[string]*mcp.Tool
}

// New loads the scope's tools (an unknown scope is an error) and keeps them current,
// watching Tools, ClusterTools and ToolScopes until ctx ends. The end of ctx also cancels
// the tools/calls in flight, as a client's cancellation would.
func New(ctx context.Context, opts Options) (*Gateway, error) {
	if opts.Client == nil {
		return nil, errors.New("gateway: Options.Client is required")
	}
	if opts.SessionPerClient && opts.Session != "" {
		return nil, errors.New("gateway: Options.Session and SessionPerClient exclude each other")
	}
	if opts.WaitBound <= 0 {
		opts.WaitBound = DefaultWaitBound
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = progressEvery
	}
	log := opts.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	log = log.WithValues("namespace", opts.Client.Namespace, "scope", opts.Scope)
	g := &Gateway{opts: opts, log: log, ctx: ctx, served: map[string][]byte{}, limits: opts.limits, tools: map[string]*mcp.Tool{}}
	if g.limits == nil {
		g.limits = newLimits(opts.MaxCalls, opts.MaxParked)
	}
	g.server = mcp.NewServer(&mcp.Implementation{Name: "toolgate", Title: "toolgate", Version: Version}, &mcp.ServerOptions{
		Logger:       sdkLogger(log.WithName("mcp")),
		Instructions: "Each tool call runs as a sandboxed Kubernetes Job under toolgate's policies; some calls wait for a person's approval.",
		// Advertise tools (with list_changed) even while the scope has none yet.
		// Tasks: the extension (2026-07-28) here; the 2025-11-25 form by taskMiddleware.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true},
			Extensions: map[string]any{tasksExtensionID: map[string]any{}}},
		// The list depends on who asks (RBAC): no shared caches.
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" },
	})
	if err := g.addTaskMethods(); err != nil {
		return nil, err
	}
	if err := g.load(ctx); err != nil {
		return nil, err
	}
	go g.run(ctx)
	return g, nil
}

// load is the first refresh; here an unknown scope is the caller's mistake, not a change.
func (g *Gateway) load(ctx context.Context) error {
	cat, err := g.opts.Client.Tools(ctx, g.opts.Scope)
	if err != nil {
		return fmt.Errorf("listing the tools of scope %q in namespace %s: %w", g.opts.Scope, g.opts.Client.Namespace, err)
	}
	g.serve(cat)
	return nil
}

// sdkLogger is log for the MCP SDK: everything it says, its errors included (a
// notification to a client that has gone, a connection that closed), is at verbosity 1,
// below the default level: what matters is logged by the gateway itself.
func sdkLogger(log logr.Logger) *slog.Logger {
	return slog.New(levelCap{logr.ToSlogHandler(log.V(1))})
}

// levelCap lowers every record above Info to Info.
type levelCap struct{ slog.Handler }

func (h levelCap) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, min(l, slog.LevelInfo))
}

func (h levelCap) Handle(ctx context.Context, r slog.Record) error {
	r.Level = min(r.Level, slog.LevelInfo)
	return h.Handler.Handle(ctx, r)
}

func (h levelCap) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelCap{h.Handler.WithAttrs(attrs)}
}
func (h levelCap) WithGroup(name string) slog.Handler { return levelCap{h.Handler.WithGroup(name)} }

// CancelSession cancels the tools/calls in flight of an MCP session (their ToolCalls
// are cancelled as a client's cancellation would) and reports how many there were.
func (g *Gateway) CancelSession(id string) int { return g.inFlight.cancelSession(id) }

// idle reports whether the gateway has no client session and no call in flight.
func (g *Gateway) idle() bool {
	for range g.server.Sessions() {
		return false
	}
	return g.inFlight.count() == 0
}

// Server is the underlying MCP server.
func (g *Gateway) Server() *mcp.Server { return g.server }

// ServeStdio serves one client over stdin/stdout until ctx ends or the client leaves;
// it returns once the calls in flight have been cleaned up.
func (g *Gateway) ServeStdio(ctx context.Context) error {
	err := g.serveIO(ctx, os.Stdin, os.Stdout)
	g.calls.Wait()
	return err
}

// serveIO serves one client over newline-delimited JSON-RPC on in and out.
func (g *Gateway) serveIO(ctx context.Context, in io.Reader, out io.Writer) error {
	return g.server.Run(ctx, stdioTransport(in, out))
}

// Serve runs a gateway over stdio until ctx ends or the client leaves.
func Serve(ctx context.Context, opts Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, err := New(ctx, opts)
	if err != nil {
		return err
	}
	return g.ServeStdio(ctx)
}

// ServeHTTP runs the authenticating HTTP server (NewHTTP) until ctx ends.
func ServeHTTP(ctx context.Context, base Options, opts HTTPOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := NewHTTP(ctx, base, opts)
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}
