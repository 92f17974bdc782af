package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/agentclient"
)

// Task statuses (MCP Tasks, both forms).
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskCancelled     = "cancelled"
)

// taskPollInterval is the polling interval a task suggests, in milliseconds.
const taskPollInterval = 2000

// taskForm is the wire form of the Tasks a request speaks.
type taskForm int

const (
	// noTasks: the request asked for no task.
	noTasks taskForm = iota
	// tasks20251125 is the 2025-11-25 form (the TypeScript SDK 1.x client): the client asks
	// with params.task; CreateTaskResult is {task}; ttl and pollInterval; tasks/result.
	tasks20251125
	// tasksExtension is the io.modelcontextprotocol/tasks extension of 2026-07-28: the
	// client declares it in the request's capabilities and the server decides; the task's
	// fields are at the top level with resultType, ttlMs and pollIntervalMs; tasks/get
	// carries the result.
	tasksExtension
)

// TaskID is the task id of a call: its name and uid. It grants nothing: every task method
// reads the call as the caller and answers only for the caller's own calls (taskOf), and
// the uid keeps a recreated call of the same name from answering for an old task. So any
// gateway replica, or one that restarted, answers from the ToolCall alone.
func TaskID(call *v1alpha1.ToolCall) string { return call.Name + "/" + string(call.UID) }

// parseTaskID splits a task id into the call's name and uid.
func parseTaskID(id string) (string, types.UID, error) {
	name, uid, ok := strings.Cut(id, "/")
	if !ok || name == "" || uid == "" || strings.Contains(uid, "/") {
		return "", "", fmt.Errorf("task %q not found: a toolgate task id is <call>/<uid>", id)
	}
	return name, types.UID(uid), nil
}

// taskView is a call's state as a task.
type taskView struct {
	id, status, message string
	created, updated    time.Time
	// result is the call's MCP result once it is done.
	result *mcp.CallToolResult
}

// taskOf is call's state as a task: working while Pending, Queued or Running;
// input_required while AwaitingApproval (the message says who approves how, and by when);
// completed once the result is frozen, an isError result included; cancelled once
// spec.cancel is set, whatever result the call then freezes (a cancelled task stays
// cancelled).
func taskOf(call *v1alpha1.ToolCall, tool *mcp.Tool) *taskView {
	v := &taskView{id: TaskID(call), created: call.CreationTimestamp.UTC(), updated: lastUpdate(call)}
	if agentclient.Done(call) {
		v.result = ResultFor(call, tool)
	}
	switch {
	case call.Spec.Cancel:
		v.status, v.message = taskCancelled, fmt.Sprintf("The call %s was cancelled; the record stays.", call.Name)
	case v.result != nil:
		v.status, v.message = taskCompleted, fmt.Sprintf("The call %s ended %s.", call.Name, call.Status.Phase)
	case agentclient.AwaitingApproval(call):
		v.status, v.message = taskInputRequired, approvalText(call)
	default:
		v.status, v.message = taskWorking, fmt.Sprintf("The call %s is %s.", call.Name, phaseOf(call))
	}
	return v
}

// phaseOf is the call's phase, Pending before the operator wrote one.
func phaseOf(call *v1alpha1.ToolCall) v1alpha1.ToolCallPhase {
	if call.Status.Phase == "" {
		return v1alpha1.PhasePending
	}
	return call.Status.Phase
}

// lastUpdate is the last change of the call's state the status records.
func lastUpdate(call *v1alpha1.ToolCall) time.Time {
	t := call.CreationTimestamp.Time
	for _, c := range call.Status.Conditions {
		if c.LastTransitionTime.After(t) {
			t = c.LastTransitionTime.Time
		}
	}
	if c := call.Status.CompletionTime; c != nil && c.After(t) {
		t = c.Time
	}
	return t.UTC()
}

// approvalText says that the call awaits a person, how an approver answers it, and by when.
func approvalText(call *v1alpha1.ToolCall) string {
	text := fmt.Sprintf("The call %s of tool %s awaits human approval and has not run. "+
		"An approver can allow it with `toolgate approve %s -n %s` (or refuse it with `toolgate deny %s -n %s`)",
		call.Name, call.Spec.Tool, call.Name, call.Namespace, call.Name, call.Namespace)
	if d := call.Status.ApprovalDeadline; d != nil {
		text += fmt.Sprintf("; without an answer by %s it is denied", d.UTC().Format(time.RFC3339))
	}
	return text + "."
}

// fields is the task in form f: ttl is null (the record is kept as long as the platform's
// retention says, not as a client asks), and in the extension form a completed task
// carries its result and an input_required one an empty inputRequests (a person answers
// through toolgate, not the client).
func (v *taskView) fields(f taskForm) map[string]any {
	m := map[string]any{
		"taskId": v.id, "status": v.status, "statusMessage": v.message,
		"createdAt": v.created.Format(time.RFC3339), "lastUpdatedAt": v.updated.Format(time.RFC3339),
	}
	if f != tasksExtension {
		m["ttl"], m["pollInterval"] = nil, taskPollInterval
		return m
	}
	m["ttlMs"], m["pollIntervalMs"] = nil, taskPollInterval
	switch {
	case v.status == taskInputRequired:
		m["inputRequests"] = map[string]any{}
	case v.status == taskCompleted && v.result != nil:
		m["result"] = v.result
	}
	return m
}

// jsonResult is a result the SDK has no type for, sent as its fields and _meta.
type jsonResult struct {
	mcp.ResultBase
	fields map[string]any
}

func (r *jsonResult) MarshalJSON() ([]byte, error) {
	m := maps.Clone(r.fields)
	if len(r.Meta) > 0 {
		m["_meta"] = r.Meta
	}
	return json.Marshal(m)
}

// createTaskResult answers a task-augmented tools/call with the call's task: {task} in the
// 2025-11-25 form, the task's fields and resultType "task" in the extension form. Its
// model-immediate-response is what a host may hand the model meanwhile.
func createTaskResult(f taskForm, call *v1alpha1.ToolCall, tool *mcp.Tool) *jsonResult {
	v := taskOf(call, tool)
	if f == tasks20251125 && v.status == taskInputRequired {
		v.status = taskWorking // 2025-11-25: a task MUST begin working; the message says why it waits
	}
	meta := callMeta(call, string(phaseOf(call)))
	meta["io.modelcontextprotocol/model-immediate-response"] = v.message
	if f == tasksExtension {
		m := v.fields(f)
		m["resultType"] = "task"
		return &jsonResult{ResultBase: mcp.ResultBase{Meta: meta}, fields: m}
	}
	return &jsonResult{ResultBase: mcp.ResultBase{Meta: meta}, fields: map[string]any{"task": v.fields(f)}}
}

// taskResult answers tasks/get (and, in the 2025-11-25 form, tasks/cancel): the task's
// fields, with resultType "complete" in the extension form.
func taskResult(f taskForm, v *taskView) *jsonResult {
	m := v.fields(f)
	if f == tasksExtension {
		m["resultType"] = "complete"
	}
	return &jsonResult{fields: m}
}
