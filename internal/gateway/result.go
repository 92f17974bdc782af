package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// PhaseRefused is the toolgate.dev/phase of a tools/call the gateway refused without
// creating a ToolCall. It is no ToolCall phase: there is no call.
const PhaseRefused = "Refused"

// Reasons of the gateway's own answers, in toolgate.dev/reason: none of them is a reason
// the operator gives a call's result, so a client tells them from a tool's failure.
const (
	// ReasonInFlightLimit: the identity has MaxCalls tools/calls in flight (refused).
	ReasonInFlightLimit = "InFlightLimit"
	// ReasonParkedLimit: the identity has MaxParked calls awaiting approval (refused).
	ReasonParkedLimit = "ParkedLimit"
	// ReasonArgumentsNotJSONObject: the tools/call arguments are not a JSON object (refused).
	ReasonArgumentsNotJSONObject = "ArgumentsNotJSONObject"
	// ReasonCreateInvalid: the API server refused the ToolCall as invalid (refused).
	ReasonCreateInvalid = "CreateInvalid"
	// ReasonCreateForbidden: the API server refused the ToolCall as forbidden: RBAC, an
	// admission policy, a quota (refused).
	ReasonCreateForbidden = "CreateForbidden"
	// ReasonAwaitingApproval: the call is parked for a person's decision and has not run.
	ReasonAwaitingApproval = "AwaitingApproval"
	// ReasonStillRunning: the call had no result within the wait bound; it goes on.
	ReasonStillRunning = "StillRunning"
	// ReasonCallDeleted: the call was deleted before it finished.
	ReasonCallDeleted = "CallDeleted"
	// ReasonSessionKeyInvalid: the request's _meta session key (MetaSession) is not a
	// non-empty string of at most 253 bytes; no call was created.
	ReasonSessionKeyInvalid = "SessionKeyInvalid"
)

// ResultFor turns a finished call (agentclient.Done) into the MCP result of tool (the
// served form of the call's tool; nil is a tool without an output schema): isError from
// the result (always for Denied), one text item, and structuredContent when the content
// is a JSON object — for an error only when the tool declares no output schema, as
// clients may validate any structuredContent against it (the TypeScript SDK 1.x does,
// isError or not). The text of a success is its content (a JSON string as that string,
// other JSON compact); of an error, the message and the content's fields (exitCode,
// stdout, stderr first), bounded; what the tool wrote is shown through pkg/display.
func ResultFor(call *v1alpha1.ToolCall, tool *mcp.Tool) *mcp.CallToolResult {
	r := call.Status.Result
	if r == nil {
		r = &v1alpha1.ToolResult{IsError: true}
	}
	view := &callView{name: call.Name, phase: string(call.Status.Phase), reason: r.Reason, message: r.Error}
	if r.Content != nil {
		view.content = r.Content.Raw
	}
	isError := r.IsError || call.Status.Phase == v1alpha1.PhaseDenied
	reason := r.Reason
	if reason == "" {
		reason = view.phase // the operator always gives one; never leave the key out
	}
	res := &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: resultText(view, isError)}},
		IsError: isError,
		Meta:    callMeta(call, reason),
	}
	if len(r.Meta) > 0 {
		res.Meta[MetaResult] = r.Meta
	}
	if obj := jsonObject(view.content); obj != nil && (!isError || tool == nil || tool.OutputSchema == nil) {
		res.StructuredContent = obj
	}
	return res
}

// jsonObject returns the result content when it is a JSON object, compact.
func jsonObject(raw []byte) json.RawMessage {
	raw = bytes.TrimSpace(raw)
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
	return errorResult(call, ReasonAwaitingApproval, approvalText(call))
}

// StillRunningResult is returned when a call has no result within the wait bound: an
// error for the model, naming the call, which keeps running.
func StillRunningResult(call *v1alpha1.ToolCall, waited time.Duration) *mcp.CallToolResult {
	return errorResult(call, ReasonStillRunning, fmt.Sprintf("The call %s of tool %s is still running after %s; it was not cancelled. "+
		"Its result will be in `toolgate get %s -n %s`.", call.Name, call.Spec.Tool, waited, call.Name, call.Namespace))
}

// deletedResult is returned for a call deleted before it finished.
func deletedResult(call *v1alpha1.ToolCall) *mcp.CallToolResult {
	return errorResult(call, ReasonCallDeleted, fmt.Sprintf("The call %s was deleted before it finished.", call.Name))
}

func errorResult(call *v1alpha1.ToolCall, reason, text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: text}},
		IsError: true,
		Meta:    callMeta(call, reason),
	}
}

// callMeta names the call, its phase (Pending before the operator wrote one) and reason.
func callMeta(call *v1alpha1.ToolCall, reason string) mcp.Meta {
	phase := call.Status.Phase
	if phase == "" {
		phase = v1alpha1.PhasePending
	}
	return mcp.Meta{MetaCall: call.Name, MetaNamespace: call.Namespace, MetaPhase: string(phase), MetaReason: reason}
}

// refusal is the answer to a tools/call the gateway refused before creating a ToolCall:
// isError, phase Refused, the reason; text is bounded and shown through pkg/display (it
// may quote the caller's input, as the API server's refusal does).
func refusal(reason, text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: multiline.String(bound(text))}},
		IsError: true,
		Meta:    mcp.Meta{MetaPhase: PhaseRefused, MetaReason: reason},
	}
}
