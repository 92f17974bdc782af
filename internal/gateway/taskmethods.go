package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/agentclient"
)

// taskParams are the params of tasks/get, tasks/result, tasks/cancel and tasks/update.
type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
	// InputResponses (tasks/update) are ignored: a toolgate task asks its client nothing.
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// addTaskMethods registers the task methods the SDK lacks, and the middleware that turns
// a task-augmented tools/call into a task.
func (g *Gateway) addTaskMethods() error {
	g.server.AddReceivingMiddleware(taskMiddleware)
	for method, h := range map[string]func(context.Context, *mcp.ServerSession, *taskParams) (mcp.Result, error){
		"tasks/get": g.tasksGet, "tasks/result": g.tasksResult, "tasks/cancel": g.tasksCancel, "tasks/update": g.tasksUpdate,
	} {
		if err := mcp.AddReceivingCustomMethod(g.server, method, h); err != nil {
			return err
		}
	}
	return nil
}

// taskNotFound is the answer for a task id that names no call of the caller: the same for
// a malformed id, a call that does not exist, one the caller may not read, another uid,
// or another requester's call, so that it tells a caller nothing about others' calls.
func taskNotFound(id string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("task %q not found among your calls", id)}
}

// taskCall reads the call of task id as the caller: it is theirs only when the uid matches
// and they are its requester.
func (g *Gateway) taskCall(ctx context.Context, id string) (*agentclient.Client, *v1alpha1.ToolCall, error) {
	c, err := g.opts.callers.clientFor(ctx, g.opts.Client)
	if err != nil {
		return nil, nil, err
	}
	name, uid, err := parseTaskID(id)
	if err != nil {
		return nil, nil, taskNotFound(id)
	}
	call, err := c.Get(ctx, name)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return nil, nil, taskNotFound(id)
	case err != nil:
		return nil, nil, fmt.Errorf("reading the call of task %q: %w", id, err)
	case call.UID != uid || call.Spec.Requester != c.Identity:
		return nil, nil, taskNotFound(id)
	}
	return c, call, nil
}

// tasksGet answers tasks/get: the call's state as a task.
func (g *Gateway) tasksGet(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	_, call, err := g.taskCall(ctx, p.TaskID)
	if err != nil {
		return nil, err
	}
	return taskResult(formOfTaskRequest(p.Meta), taskOf(call, g.tool(call.Spec.Tool))), nil
}

// tasksUpdate acknowledges tasks/update (extension form) for a task of the caller; there is
// nothing to answer: a person approves through toolgate, not the agent's client.
func (g *Gateway) tasksUpdate(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	if _, _, err := g.taskCall(ctx, p.TaskID); err != nil {
		return nil, err
	}
	return &jsonResult{fields: map[string]any{"resultType": "complete"}}, nil
}

// tasksCancel sets spec.cancel on the task's call as the caller (the toolgate-cancel
// policy sees the requester); the operator stops it and the record stays. A task already
// completed or cancelled cannot be cancelled in the 2025-11-25 form (-32602, as it says), whose
// answer is the task, cancelled; the extension's answer is always an acknowledgement.
func (g *Gateway) tasksCancel(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	c, call, err := g.taskCall(ctx, p.TaskID)
	if err != nil {
		return nil, err
	}
	form := formOfTaskRequest(p.Meta)
	ack := &jsonResult{fields: map[string]any{"resultType": "complete"}}
	if v := taskOf(call, nil); v.status == taskCompleted || v.status == taskCancelled {
		if form == tasksExtension {
			return ack, nil // the extension's cancel is an acknowledgement, whatever the task became
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("cannot cancel task %q: it is already %s", p.TaskID, v.status)}
	}
	if _, err := c.Cancel(ctx, call.Name); err != nil {
		g.log.Error(err, "tasks/cancel", "toolCall", klog.KObj(call))
		return nil, fmt.Errorf("cancelling the call of task %q: %w", p.TaskID, err)
	}
	g.log.Info("tasks/cancel", "toolCall", klog.KObj(call))
	if form == tasksExtension {
		return ack, nil
	}
	call.Spec.Cancel = true
	return taskResult(form, taskOf(call, nil)), nil
}

// tasksResult answers tasks/result (2025-11-25): the call's MCP result once it is done, with
// the related-task _meta. Until then it waits, as that form says, sending progress on the
// call's phase and every ProgressInterval when the request has a progressToken (so a
// client that resets its timeout on progress can wait for a person's approval). A wait
// takes one of the identity's call slots.
func (g *Gateway) tasksResult(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
	c, call, err := g.taskCall(ctx, p.TaskID)
	if err != nil {
		return nil, err
	}
	if !agentclient.Done(call) {
		if call, err = g.waitDone(ctx, ss, p, c, call); err != nil {
			return nil, err
		}
	}
	res := ResultFor(call, g.tool(call.Spec.Tool))
	res.Meta["io.modelcontextprotocol/related-task"] = map[string]any{"taskId": p.TaskID}
	return res, nil
}

// waitDone waits for the call of a tasks/result to be done.
func (g *Gateway) waitDone(ctx context.Context, ss *mcp.ServerSession, p *taskParams, c *agentclient.Client, call *v1alpha1.ToolCall) (*v1alpha1.ToolCall, error) {
	if !g.limits.acquire() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s has %d requests waiting, the most this gateway runs at once for one identity: "+
			"poll tasks/get instead", c.Identity, cap(g.limits.slots))}
	}
	defer g.limits.release()
	g.calls.Add(1)
	defer g.calls.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(g.ctx, cancel)()
	prog := newProgress(ss, p.Meta["progressToken"], g.opts.ProgressInterval)
	go prog.run(ctx)
	last, err := c.Wait(ctx, call.Name, agentclient.Done, func(v *v1alpha1.ToolCall) { prog.observe(ctx, v) })
	switch {
	case err == nil && last.UID == call.UID:
		return last, nil
	case err == nil || apierrors.IsNotFound(err):
		return nil, taskNotFound(p.TaskID)
	}
	return nil, fmt.Errorf("waiting for the call of task %q: %w", p.TaskID, err)
}
