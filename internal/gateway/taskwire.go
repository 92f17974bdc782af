package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// tasksExtensionID names the Tasks extension (2026-07-28).
	tasksExtensionID = "io.modelcontextprotocol/tasks"
	// metaTaskRequest is where the gateway moves a tools/call's params.task (2025-11-25)
	// before the SDK, which has no such field, parses the request.
	metaTaskRequest = "toolgate.dev/task-request"
)

// liftTaskParams moves the params.task of a tools/call (a client asking for a task in the
// 2025-11-25 form) into params._meta, where the SDK keeps it for the gateway. Any other
// message is returned as it is.
func liftTaskParams(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"task"`)) || !bytes.Contains(msg, []byte(`tools/call`)) {
		return msg
	}
	var m map[string]json.RawMessage
	var params map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || string(m["method"]) != `"tools/call"` || json.Unmarshal(m["params"], &params) != nil {
		return msg
	}
	task, ok := params["task"]
	if !ok {
		return msg
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return msg
	}
	meta[metaTaskRequest] = task
	delete(params, "task")
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return msg
	}
	if m["params"], err = json.Marshal(params); err != nil {
		return msg
	}
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// taskFormOf is the Tasks form a tools/call asks for: the extension when a request of the
// stateless protocol declares it in its capabilities, the 2025-11-25 form when an older
// one carries params.task, else none.
func taskFormOf(meta mcp.Meta) taskForm {
	if v, _ := meta[mcp.MetaKeyProtocolVersion].(string); v >= statelessProtocol {
		caps, _ := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
		ext, _ := caps["extensions"].(map[string]any)
		if _, ok := ext[tasksExtensionID]; ok {
			return tasksExtension
		}
		return noTasks
	}
	if _, ok := meta[metaTaskRequest]; ok {
		return tasks20251125
	}
	return noTasks
}

// formOfTaskRequest is the form in which to answer tasks/get, tasks/result and tasks/cancel:
// the extension's for a request of the stateless protocol, else 2025-11-25's.
func formOfTaskRequest(meta mcp.Meta) taskForm {
	if v, _ := meta[mcp.MetaKeyProtocolVersion].(string); v >= statelessProtocol {
		return tasksExtension
	}
	return tasks20251125
}

// taskSlot carries a task-augmented tools/call's form into the tool handler, and the
// CreateTaskResult that answers it back out (the SDK's tool handlers return only a
// CallToolResult).
type taskSlot struct {
	form    taskForm
	created mcp.Result
}

type taskSlotKey struct{}

func slotOf(ctx context.Context) *taskSlot {
	s, _ := ctx.Value(taskSlotKey{}).(*taskSlot)
	return s
}

// taskMiddleware serves the parts of Tasks the SDK cannot: a tools/call answered with a
// task, and, for clients of the initialize handshake, the 2025-11-25 capability
// (tasks.cancel, tasks.requests.tools.call) and each tool's execution.taskSupport
// "optional".
func taskMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			form := taskFormOf(metaOf(req))
			if form == noTasks {
				return next(ctx, method, req)
			}
			slot := &taskSlot{form: form}
			res, err := next(context.WithValue(ctx, taskSlotKey{}, slot), method, req)
			switch {
			case err != nil:
				return nil, err
			case slot.created != nil:
				return slot.created, nil
			case form == tasks20251125:
				return nil, refusedTask(res) // a client that asked for a task parses no CallToolResult
			}
			return res, nil
		case "initialize":
			return patched(next(ctx, method, req))(addTasksCapability)
		case "tools/list":
			if formOfTaskRequest(metaOf(req)) == tasksExtension {
				return next(ctx, method, req)
			}
			return patched(next(ctx, method, req))(addTaskSupport)
		}
		return next(ctx, method, req)
	}
}

// metaOf is the _meta of a request's params; a request without params (a tools/list may
// have none) has none.
func metaOf(req mcp.Request) mcp.Meta {
	p := req.GetParams()
	if p == nil || reflect.ValueOf(p).IsNil() {
		return nil
	}
	return p.GetMeta()
}

// refusedTask is the JSON-RPC error (-32600) that answers a task request (2025-11-25) the
// gateway refused before making a call: the refusal's text, and its _meta as data.
func refusedTask(res mcp.Result) error {
	r, ok := res.(*mcp.CallToolResult)
	if !ok || len(r.Content) == 0 {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the call made no task"}
	}
	text := ""
	if tc, ok := r.Content[0].(*mcp.TextContent); ok {
		text = tc.Text
	}
	data, _ := json.Marshal(r.Meta) // a map of strings cannot fail to marshal
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: text, Data: data}
}

// patchedResult is a result sent with changes the SDK's types cannot carry.
type patchedResult struct {
	mcp.Result
	patch func(map[string]any)
}

func (r *patchedResult) MarshalJSON() ([]byte, error) {
	raw, err := json.Marshal(r.Result)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // numbers in schemas stay as they were written
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	r.patch(m)
	return json.Marshal(m)
}

// patched returns a function that wraps a successful result with patch.
func patched(res mcp.Result, err error) func(func(map[string]any)) (mcp.Result, error) {
	return func(patch func(map[string]any)) (mcp.Result, error) {
		if err != nil || res == nil {
			return res, err
		}
		return &patchedResult{Result: res, patch: patch}, nil
	}
}

func addTasksCapability(m map[string]any) {
	caps, _ := m["capabilities"].(map[string]any)
	if caps == nil {
		return
	}
	caps["tasks"] = map[string]any{
		"cancel":   map[string]any{},
		"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}},
	}
}

func addTaskSupport(m map[string]any) {
	tools, _ := m["tools"].([]any)
	for _, t := range tools {
		if tool, ok := t.(map[string]any); ok {
			tool["execution"] = map[string]any{"taskSupport": "optional"}
		}
	}
}
