package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

func taskCall(phase v1alpha1.ToolCallPhase, r *v1alpha1.ToolResult, cancel bool) *v1alpha1.ToolCall {
	call := finished(phase, r)
	call.UID = "u-1"
	call.Spec.Cancel = cancel
	return call
}

func TestTaskOf(t *testing.T) {
	deadline := metav1.NewTime(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
	parked := taskCall(v1alpha1.PhaseAwaitingApproval, nil, false)
	parked.Status.ApprovalDeadline = &deadline
	failed := &v1alpha1.ToolResult{IsError: true, Reason: "NonZeroExit", Error: "exit 1"}
	ok := &v1alpha1.ToolResult{Reason: "Succeeded", Content: content(`"hi"`)}
	cases := []struct {
		name       string
		call       *v1alpha1.ToolCall
		status     string
		message    string // a substring
		withResult bool
	}{
		{"no phase yet", taskCall("", nil, false), taskWorking, "is Pending", false},
		{"queued", taskCall(v1alpha1.PhaseQueued, nil, false), taskWorking, "is Queued", false},
		{"running", taskCall(v1alpha1.PhaseRunning, nil, false), taskWorking, "is Running", false},
		{"parked", parked, taskInputRequired, "`toolgate approve grep-x1 -n agents` (or refuse it with `toolgate deny grep-x1 -n agents`); without an answer by 2026-12-06T10:00:00Z it is denied", false},
		{"succeeded", taskCall(v1alpha1.PhaseSucceeded, ok, false), taskCompleted, "ended Succeeded", true},
		{"an isError result is completed", taskCall(v1alpha1.PhaseFailed, failed, false), taskCompleted, "ended Failed", true},
		{"denied", taskCall(v1alpha1.PhaseDenied, failed, false), taskCompleted, "ended Denied", true},
		{"a terminal phase without a result is not done", taskCall(v1alpha1.PhaseFailed, nil, false), taskWorking, "is Failed", false},
		{"cancel asked, still running", taskCall(v1alpha1.PhaseRunning, nil, true), taskCancelled, "cancelled", false},
		{"cancelled stays cancelled whatever the result", taskCall(v1alpha1.PhaseSucceeded, ok, true), taskCancelled, "cancelled", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := taskOf(tc.call, nil)
			if v.status != tc.status || !strings.Contains(v.message, tc.message) || (v.result != nil) != tc.withResult {
				t.Errorf("taskOf = %s %q (result %v), want %s containing %q (result %v)", v.status, v.message, v.result != nil, tc.status, tc.message, tc.withResult)
			}
			if v.id != "grep-x1/u-1" {
				t.Errorf("task id %q, want grep-x1/u-1", v.id)
			}
		})
	}
}

func TestParseTaskID(t *testing.T) {
	for id, want := range map[string]string{
		"grep-x1/u-1": "grep-x1 u-1", "grep-x1": "error", "/u-1": "error", "grep-x1/": "error",
		"a/b/c": "error", "": "error",
	} {
		name, uid, err := parseTaskID(id)
		got := name + " " + string(uid)
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("parseTaskID(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestLiftTaskParams(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"a task request": {
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{"ttl":5}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"toolgate.dev/task-request":{"ttl":5}}}}`,
		},
		"keeps the other _meta": {
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{},"_meta":{"progressToken":7}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":7,"toolgate.dev/task-request":{}}}}`,
		},
		"no task":              {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"task"}}`, ""},
		"another method":       {`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"task":{},"x":"tools/call"}}`, ""},
		"a task in arguments":  {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"task":1}}}`, ""},
		"_meta not an object":  {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"task":{},"_meta":3}}`, ""},
		"not JSON is left be":  {`{"method":"tools/call","task"`, ""},
		"params not an object": {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["task"]}`, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = tc.in
			}
			got := string(liftTaskParams([]byte(tc.in)))
			if json.Valid([]byte(want)) {
				var g, w any
				_ = json.Unmarshal([]byte(got), &g)
				_ = json.Unmarshal([]byte(want), &w)
				if d := cmp.Diff(w, g); d != "" {
					t.Errorf("liftTaskParams (-want +got):\n%s", d)
				}
			} else if got != want {
				t.Errorf("liftTaskParams = %s, want it unchanged", got)
			}
		})
	}
}

func TestTaskFormOf(t *testing.T) {
	ext := map[string]any{"extensions": map[string]any{tasksExtensionID: map[string]any{}}}
	cases := map[string]struct {
		meta     mcp.Meta
		call, rq taskForm
	}{
		"nothing":                 {nil, noTasks, tasks20251125},
		"params.task, 2025-11-25": {mcp.Meta{metaTaskRequest: map[string]any{}}, tasks20251125, tasks20251125},
		"stateless with the extension": {mcp.Meta{mcp.MetaKeyProtocolVersion: "2026-07-28", mcp.MetaKeyClientCapabilities: ext},
			tasksExtension, tasksExtension},
		"stateless without it": {mcp.Meta{mcp.MetaKeyProtocolVersion: "2026-07-28"}, noTasks, tasksExtension},
		"stateless with a lifted params.task is no task": {mcp.Meta{mcp.MetaKeyProtocolVersion: "2026-07-28", metaTaskRequest: map[string]any{}},
			noTasks, tasksExtension},
		"an older per-request version": {mcp.Meta{mcp.MetaKeyProtocolVersion: "2025-11-25", mcp.MetaKeyClientCapabilities: ext}, noTasks, tasks20251125},
	}
	for name, tc := range cases {
		if got := taskFormOf(tc.meta); got != tc.call {
			t.Errorf("%s: taskFormOf = %d, want %d", name, got, tc.call)
		}
		if got := formOfTaskRequest(tc.meta); got != tc.rq {
			t.Errorf("%s: formOfTaskRequest = %d, want %d", name, got, tc.rq)
		}
	}
}

func TestCreateTaskResult(t *testing.T) {
	parked := taskCall(v1alpha1.PhaseAwaitingApproval, nil, false)
	parked.CreationTimestamp = metav1.NewTime(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	old, err := json.Marshal(createTaskResult(tasks20251125, parked, nil))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal(old, &got)
	task, _ := got["task"].(map[string]any)
	want := map[string]any{"taskId": "grep-x1/u-1", "status": "working", "statusMessage": approvalText(parked),
		"createdAt": "2026-12-06T09:00:00Z", "lastUpdatedAt": "2026-12-06T09:00:00Z", "ttl": nil, "pollInterval": float64(taskPollInterval)}
	if d := cmp.Diff(want, task); d != "" {
		t.Errorf("2025-11-25 CreateTaskResult.task (-want +got):\n%s", d)
	}
	ext, _ := json.Marshal(createTaskResult(tasksExtension, parked, nil))
	got = nil
	_ = json.Unmarshal(ext, &got)
	for k, v := range map[string]any{"resultType": "task", "status": "input_required", "ttlMs": nil, "inputRequests": map[string]any{}} {
		if d := cmp.Diff(v, got[k]); d != "" {
			t.Errorf("extension CreateTaskResult %s (-want +got):\n%s", k, d)
		}
	}
}

func TestIsRetryOf(t *testing.T) {
	key := callKey{tool: "grep", scope: "s", session: "chat", digest: "sha256:ab"}
	base := func(mut func(*v1alpha1.ToolCall)) *v1alpha1.ToolCall {
		call := taskCall(v1alpha1.PhaseAwaitingApproval, nil, false)
		call.Spec.Requester, call.Spec.Scope, call.Spec.Session, call.Status.ArgumentsDigest = "alice", "s", "chat", "sha256:ab"
		if mut != nil {
			mut(call)
		}
		return call
	}
	cases := map[string]struct {
		call *v1alpha1.ToolCall
		want bool
	}{
		"parked":               {base(nil), true},
		"approved, running":    {base(func(c *v1alpha1.ToolCall) { c.Status.Phase, c.Status.Approver = v1alpha1.PhaseRunning, "bob" }), true},
		"running, never asked": {base(func(c *v1alpha1.ToolCall) { c.Status.Phase = v1alpha1.PhaseRunning }), false},
		"finished": {base(func(c *v1alpha1.ToolCall) {
			c.Status.Phase, c.Status.Result = v1alpha1.PhaseSucceeded, &v1alpha1.ToolResult{}
		}), false},
		"cancelled":         {base(func(c *v1alpha1.ToolCall) { c.Spec.Cancel = true }), false},
		"another requester": {base(func(c *v1alpha1.ToolCall) { c.Spec.Requester = "mallory" }), false},
		"another session":   {base(func(c *v1alpha1.ToolCall) { c.Spec.Session = "other" }), false},
		"another scope":     {base(func(c *v1alpha1.ToolCall) { c.Spec.Scope = "" }), false},
		"another tool":      {base(func(c *v1alpha1.ToolCall) { c.Spec.Tool = "sh" }), false},
		"a label that lies": {base(func(c *v1alpha1.ToolCall) { c.Status.ArgumentsDigest = "sha256:cd" }), false},
		"not yet admitted":  {base(func(c *v1alpha1.ToolCall) { c.Status.ArgumentsDigest = "" }), false},
	}
	for name, tc := range cases {
		if got := isRetryOf(tc.call, "alice", key); got != tc.want {
			t.Errorf("%s: isRetryOf = %v, want %v", name, got, tc.want)
		}
	}
}

func TestArgumentsDigestIsCanonical(t *testing.T) {
	a, b := argumentsDigest([]byte(`{"b":1,"a":"x"}`)), argumentsDigest([]byte(` { "a" : "x", "b" : 1 } `))
	if a == "" || a != b {
		t.Errorf("digests %q and %q of the same arguments differ", a, b)
	}
	if l := digestLabels(a)[LabelArgumentsDigest]; len(l) != digestLabelLen || !strings.HasPrefix(a, "sha256:"+l) {
		t.Errorf("label %q is not the digest's first %d hex digits (%s)", l, digestLabelLen, a)
	}
	if argumentsDigest([]byte(`{"a":1,"a":2}`)) != "" || digestLabels("") != nil {
		t.Error("arguments the operator refuses must have no digest and no label")
	}
}

func TestTaskSupportPatchKeepsNumbers(t *testing.T) {
	res := &mcp.ListToolsResult{Tools: []*mcp.Tool{{Name: "x", InputSchema: json.RawMessage(`{"type":"object","maxLength":18446744073709551617}`)}}}
	out, err := json.Marshal(&patchedResult{Result: res, patch: addTaskSupport})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`18446744073709551617`, `"execution":{"taskSupport":"optional"}`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("tools/list %s lacks %s", out, want)
		}
	}
}
