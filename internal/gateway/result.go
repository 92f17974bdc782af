package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// ResultFor turns a finished call (agentclient.Done) into the MCP result: isError from the
// result (always for Denied), one text item (a JSON string content as that string, other
// JSON compact, the error message for an error), and structuredContent when a successful
// result's content is a JSON object.
func ResultFor(call *v1alpha1.ToolCall) *mcp.CallToolResult {
	r := call.Status.Result
	if r == nil {
		r = &v1alpha1.ToolResult{IsError: true}
	}
	isError := r.IsError || call.Status.Phase == v1alpha1.PhaseDenied
	res := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: resultText(call, r, isError)}},
		IsError: isError,
		Meta:    callMeta(call),
	}
	if r.Reason != "" {
		res.Meta[MetaReason] = r.Reason
	}
	if len(r.Meta) > 0 {
		res.Meta[MetaResult] = r.Meta
	}
	if !isError {
		if obj := jsonObject(r); obj != nil {
			res.StructuredContent = obj
		}
	}
	return res
}

func resultText(call *v1alpha1.ToolCall, r *v1alpha1.ToolResult, isError bool) string {
	if isError && r.Error != "" {
		return r.Error
	}
	if r.Content != nil {
		if text := contentText(r.Content.Raw); text != "" {
			return text
		}
	}
	if isError {
		return fmt.Sprintf("the call %s ended in phase %s without a message (reason %q)", call.Name, call.Status.Phase, r.Reason)
	}
	return ""
}

// contentText renders result content as text: a JSON string is that string, any other
// JSON value its compact form.
func contentText(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// jsonObject returns the result content when it is a JSON object.
func jsonObject(r *v1alpha1.ToolResult) json.RawMessage {
	if r.Content == nil {
		return nil
	}
	raw := bytes.TrimSpace(r.Content.Raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return nil
	}
	return buf.Bytes()
}

// AwaitingApprovalResult is returned at once for a call a policy parked for a person's
// decision: an error for the model (nothing ran) that names the call and how to approve
// it. The call stays; it runs if approved.
func AwaitingApprovalResult(call *v1alpha1.ToolCall) *mcp.CallToolResult {
	text := fmt.Sprintf("The call %s of tool %s awaits human approval and has not run. "+
		"An approver can allow it with `toolgate approve %s -n %s` (or refuse it with `toolgate deny %s -n %s`)",
		call.Name, call.Spec.Tool, call.Name, call.Namespace, call.Name, call.Namespace)
	if d := call.Status.ApprovalDeadline; d != nil {
		text += fmt.Sprintf("; without an answer by %s it is denied", d.UTC().Format(time.RFC3339))
	}
	return errorResult(call, text+".")
}

// StillRunningResult is returned when a call has no result within the wait bound: an
// error for the model, naming the call, which keeps running.
func StillRunningResult(call *v1alpha1.ToolCall, waited time.Duration) *mcp.CallToolResult {
	return errorResult(call, fmt.Sprintf("The call %s of tool %s is still running after %s; it was not cancelled. "+
		"Its result will be in `toolgate get %s -n %s`.", call.Name, call.Spec.Tool, waited, call.Name, call.Namespace))
}

func errorResult(call *v1alpha1.ToolCall, text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: text}},
		IsError: true,
		Meta:    callMeta(call),
	}
}

func callMeta(call *v1alpha1.ToolCall) mcp.Meta {
	m := mcp.Meta{MetaCall: call.Name, MetaNamespace: call.Namespace}
	if call.Status.Phase != "" {
		m[MetaPhase] = string(call.Status.Phase)
	}
	return m
}
