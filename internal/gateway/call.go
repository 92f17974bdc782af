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
	outcomeTask             = "Task"
)

// cancelTimeout bounds cancelling the ToolCall of a cancelled request; the request's own
// context is already done by then.
const cancelTimeout = 30 * time.Second

// extensionTaskAfter is how long a tools/call of a client with the Tasks extension waits
// for a result before it answers with a task (or at once, when the call parks).
const extensionTaskAfter = 10 * time.Second

// handlerFor is the tools/call handler of the served tool t.
func (g *Gateway) handlerFor(t *mcp.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.callTool(ctx, req, t)
	}
}

// callTool creates a ToolCall of the served tool t (or finds the call it retries), waits
// for its frozen result (or for it to park for approval, or for the wait bound), and
// answers; a task-augmented request is answered with the call's task instead (answerTask).
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
	call, res, err := g.callFor(ctx, log, c, req, t)
	if call == nil {
		return res, err
	}
	return g.answer(ctx, log.WithValues("toolCall", klog.KObj(call)), c, req, call, t)
}

// answer answers a tools/call about call: with its task at once for a task request of the
// 2025-11-25 form; else after waiting (with progress) for its result, its parking or the
// bound, and then, for a client of the extension, with its task unless it is done.
func (g *Gateway) answer(ctx context.Context, log logr.Logger, c *agentclient.Client, req *mcp.CallToolRequest, call *v1alpha1.ToolCall, t *mcp.Tool) (*mcp.CallToolResult, error) {
	slot := slotOf(ctx)
	if slot != nil && slot.form == tasks20251125 {
		return g.answerTask(log, slot, g.admitted(ctx, c, call), t), nil
	}
	bound := g.opts.WaitBound
	if slot != nil {
		bound = min(bound, extensionTaskAfter) // the extension lets the server decide: a task soon
	}
	res, last, outcome, err := g.await(ctx, c, call, t, bound, newProgress(req.Session, req.Params.GetProgressToken(), g.opts.ProgressInterval))
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
	case slot != nil && (outcome == outcomeAwaitingApproval || outcome == outcomeStillRunning):
		return g.answerTask(log, slot, last, t), nil
	}
	log.Info("tools/call", "outcome", outcome, "isError", res.IsError, "reason", res.Meta[MetaReason])
	return res, nil
}

// callFor is the call a tools/call is about: the caller's parked or approved call it
// retries (findRetry), or a new one. Without a call it returns the refusal or error to
// answer with.
func (g *Gateway) callFor(ctx context.Context, log logr.Logger, c *agentclient.Client, req *mcp.CallToolRequest, t *mcp.Tool) (*v1alpha1.ToolCall, *mcp.CallToolResult, error) {
	args := bytes.TrimSpace(req.Params.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = []byte(`{}`)
	}
	if args[0] != '{' {
		return nil, refused(log, ReasonArgumentsNotJSONObject, "the arguments of a tools/call must be a JSON object"), nil
	}
	session, err := g.sessionFor(c.Identity, req)
	if err != nil {
		return nil, refused(log, ReasonSessionKeyInvalid, err.Error()), nil
	}
	key := callKey{tool: t.Name, scope: g.opts.Scope, session: session, digest: argumentsDigest(args)}
	if call := findRetry(ctx, c, key); call != nil {
		log.Info("tools/call retries a call", "toolCall", klog.KObj(call), "phase", call.Status.Phase)
		return call, nil, nil
	}
	if ok, n := g.limits.roomToPark(ctx, c); !ok {
		return nil, refused(log, ReasonParkedLimit, fmt.Sprintf("%s has %d calls awaiting approval, the most this gateway lets one identity leave waiting: "+
			"wait for a person to answer one (toolgate approve or deny) and call again", c.Identity, n)), nil
	}
	call, err := c.Create(ctx, agentclient.CallRequest{
		Tool: t.Name, Scope: g.opts.Scope, Session: key.session, Arguments: args, CreatedBy: CreatedBy,
		Labels:      digestLabels(key.digest),
		Traceparent: metaString(req.Params.Meta, "traceparent"), // MCP's _meta trace context
	})
	if err != nil {
		res, err := createFailed(log, err)
		return nil, res, err
	}
	return call, nil, nil
}

// answerTask puts the call's task into the request's slot and returns the placeholder the
// SDK's tool handler needs (the middleware answers with the task instead).
func (g *Gateway) answerTask(log logr.Logger, slot *taskSlot, call *v1alpha1.ToolCall, t *mcp.Tool) *mcp.CallToolResult {
	slot.created = createTaskResult(slot.form, call, t)
	if agentclient.AwaitingApproval(call) {
		g.limits.park(call)
	}
	log.Info("tools/call", "outcome", outcomeTask, "task", TaskID(call), "phase", phaseOf(call))
	return &mcp.CallToolResult{}
}

// admissionWait bounds how long a task-augmented tools/call (2025-11-25) waits for the
// operator to admit its call before it answers with the task.
const admissionWait = 5 * time.Second

// admitted waits (at most admissionWait) for the operator to take the call past Pending and
// returns the last version seen: a call parked for approval is then counted against the
// identity's parked bound, as it is without a task.
func (g *Gateway) admitted(ctx context.Context, c *agentclient.Client, call *v1alpha1.ToolCall) *v1alpha1.ToolCall {
	ctx, cancel := context.WithTimeout(ctx, admissionWait)
	defer cancel()
	last, _ := c.Wait(ctx, call.Name, func(v *v1alpha1.ToolCall) bool { return phaseOf(v) != v1alpha1.PhasePending }, nil)
	if last == nil || last.UID != call.UID {
		return call
	}
	return last
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

// await waits for the call (as c, the caller) for at most bound and decides the answer and the logged
// outcome, with the last version of the call seen; prog (nil: none) reports the call's
// phases meanwhile.
func (g *Gateway) await(ctx context.Context, c *agentclient.Client, call *v1alpha1.ToolCall, t *mcp.Tool, bound time.Duration, prog *progress) (*mcp.CallToolResult, *v1alpha1.ToolCall, string, error) {
	waitCtx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	go prog.run(waitCtx)
	until := func(c *v1alpha1.ToolCall) bool { return agentclient.Done(c) || agentclient.AwaitingApproval(c) }
	last, err := c.WaitFrom(waitCtx, call, until, func(v *v1alpha1.ToolCall) { prog.observe(waitCtx, v) })
	if last == nil {
		last = call
	}
	switch {
	case err == nil && agentclient.Done(last):
		return ResultFor(last, t), last, string(last.Status.Phase), nil
	case err == nil:
		return AwaitingApprovalResult(last), last, outcomeAwaitingApproval, nil
	case ctx.Err() != nil:
		// The client cancelled or went away: nobody will read the result, so the call is
		// cancelled rather than left running unowned.
		g.cancelCall(ctx, c, last)
		return nil, last, outcomeCancelled, ctx.Err()
	case waitCtx.Err() != nil:
		return StillRunningResult(last, bound), last, outcomeStillRunning, nil
	case apierrors.IsNotFound(err):
		return deletedResult(last), last, outcomeDeleted, nil
	}
	return nil, last, outcomeFailed, fmt.Errorf("waiting for ToolCall %s/%s: %w", last.Namespace, last.Name, err)
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
