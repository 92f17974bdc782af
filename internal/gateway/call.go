package gateway

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/agentclient"
)

// CreatedBy is the toolgate.dev/created-by label of the calls the gateway makes.
const CreatedBy = "toolgate-mcp"

// Outcomes logged for a tools/call besides the call's terminal phase.
const (
	outcomeAwaitingApproval = "AwaitingApproval"
	outcomeStillRunning     = "StillRunning"
	outcomeCancelled        = "Cancelled"
	outcomeDeleted          = "Deleted"
	outcomeRejected         = "Rejected"
	outcomeFailed           = "GatewayError"
)

// cancelTimeout bounds cancelling the ToolCall of a cancelled request; the request's own
// context is already done by then.
const cancelTimeout = 30 * time.Second

// handlerFor is the tools/call handler of the served tool t.
func (g *Gateway) handlerFor(t *mcp.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.callTool(ctx, req, t)
	}
}

// callTool creates a ToolCall of the served tool t, waits for its frozen result (or for it
// to park for approval, or for the wait bound), and answers.
func (g *Gateway) callTool(ctx context.Context, req *mcp.CallToolRequest, t *mcp.Tool) (*mcp.CallToolResult, error) {
	g.calls.Add(1)
	defer g.calls.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(g.ctx, cancel)()
	defer g.inFlight.add(sessionID(req), cancel)()
	log := g.log.WithValues("tool", t.Name)
	c, err := g.opts.callers.clientFor(ctx, g.opts.Client)
	if err != nil {
		log.Error(err, "tools/call", "outcome", outcomeFailed)
		return nil, err
	}
	if !g.limits.acquire() {
		return refused(log, ReasonInFlightLimit, fmt.Sprintf("%s has %d calls in flight, the most this gateway runs at once for one identity: "+
			"wait for one to finish and call again", c.Identity, cap(g.limits.slots))), nil
	}
	defer g.limits.release()
	if ok, n := g.limits.roomToPark(ctx, c); !ok {
		return refused(log, ReasonParkedLimit, fmt.Sprintf("%s has %d calls awaiting approval, the most this gateway lets one identity leave waiting: "+
			"wait for a person to answer one (toolgate approve or deny) and call again", c.Identity, n)), nil
	}
	args := bytes.TrimSpace(req.Params.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = []byte(`{}`)
	}
	if args[0] != '{' {
		return refused(log, ReasonArgumentsNotJSONObject, "the arguments of a tools/call must be a JSON object"), nil
	}
	call, err := c.Create(ctx, agentclient.CallRequest{
		Tool: t.Name, Scope: g.opts.Scope, Session: g.opts.Session, Arguments: args, CreatedBy: CreatedBy,
		Traceparent: metaString(req.Params.Meta, "traceparent"), // MCP's _meta trace context
	})
	if err != nil {
		return createFailed(log, err)
	}
	log = log.WithValues("toolCall", klog.KObj(call))
	res, outcome, err := g.await(ctx, c, call, t)
	if outcome == outcomeAwaitingApproval {
		g.limits.park(call)
	}
	switch {
	case outcome == outcomeCancelled:
		log.Info("tools/call", "outcome", outcome)
		return nil, err
	case err != nil:
		log.Error(err, "tools/call", "outcome", outcome)
		return nil, err
	}
	log.Info("tools/call", "outcome", outcome, "isError", res.IsError, "reason", res.Meta[MetaReason])
	return res, nil
}

// refused logs and answers a tools/call the gateway refused before creating a ToolCall.
func refused(log logr.Logger, reason, text string) *mcp.CallToolResult {
	log.Info("tools/call", "outcome", outcomeRejected, "reason", reason, "error", text)
	return refusal(reason, text)
}

// createFailed answers a refused create: an invalid object (arguments the API server
// rejects) or a forbidden one (RBAC, an admission policy, a quota) is a refusal the model
// can read and act on, so it is a tool error; anything else (the API server unreachable)
// is a protocol error.
func createFailed(log logr.Logger, err error) (*mcp.CallToolResult, error) {
	switch {
	case apierrors.IsInvalid(err):
		return refused(log, ReasonCreateInvalid, "the call was rejected: "+err.Error()), nil
	case apierrors.IsForbidden(err):
		return refused(log, ReasonCreateForbidden, "the call was refused: "+err.Error()), nil
	}
	log.Error(err, "tools/call", "outcome", outcomeFailed)
	return nil, fmt.Errorf("creating the ToolCall: %w", err)
}

// await waits for the call (as c, the caller) and decides the answer and the logged outcome.
func (g *Gateway) await(ctx context.Context, c *agentclient.Client, call *v1alpha1.ToolCall, t *mcp.Tool) (*mcp.CallToolResult, string, error) {
	waitCtx, cancel := context.WithTimeout(ctx, g.opts.WaitBound)
	defer cancel()
	until := func(c *v1alpha1.ToolCall) bool { return agentclient.Done(c) || agentclient.AwaitingApproval(c) }
	last, err := c.Wait(waitCtx, call.Name, until, nil)
	if last == nil {
		last = call
	}
	switch {
	case err == nil && agentclient.Done(last):
		return ResultFor(last, t), string(last.Status.Phase), nil
	case err == nil:
		return AwaitingApprovalResult(last), outcomeAwaitingApproval, nil
	case ctx.Err() != nil:
		// The client cancelled or went away: nobody will read the result, so the call is
		// cancelled rather than left running unowned.
		g.cancelCall(ctx, c, last)
		return nil, outcomeCancelled, ctx.Err()
	case waitCtx.Err() != nil:
		return StillRunningResult(last, g.opts.WaitBound), outcomeStillRunning, nil
	case apierrors.IsNotFound(err):
		return deletedResult(last), outcomeDeleted, nil
	}
	return nil, outcomeFailed, fmt.Errorf("waiting for ToolCall %s/%s: %w", last.Namespace, last.Name, err)
}

// sessionID is the MCP session of a request ("" outside a session).
func sessionID(req *mcp.CallToolRequest) string {
	if req.Session == nil {
		return ""
	}
	return req.Session.ID()
}

// cancelCall is what a cancelled request does to its ToolCall: it sets spec.cancel, as the
// caller (the gateway's client acts as the caller's identity: impersonation over HTTP, the
// kubeconfig on stdio), so the toolgate-cancel admission policy sees the requester. The
// operator then stops the Job and ends the call Failed/Cancelled; the record stays until
// retention removes it, so a disconnected agent leaves neither work running nor a gap in
// the audit. A call that already finished is left alone: it is history, not work.
func (g *Gateway) cancelCall(ctx context.Context, c *agentclient.Client, call *v1alpha1.ToolCall) {
	if agentclient.Done(call) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	if _, err := c.Cancel(ctx, call.Name); err != nil && !apierrors.IsNotFound(err) {
		g.log.Error(err, "Cancelling the ToolCall of a cancelled tools/call", "toolCall", klog.KObj(call))
	}
}
