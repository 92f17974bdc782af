/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package toolgatetest

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/agentclient"
	"github.com/toolgate/toolgate/pkg/frame"
)

// Builders in the style of jobset's pkg/util/testing/wrappers.go: Make<Kind>(name, ns)
// returns a wrapper holding a valid object; setters chain; Obj() returns a deep copy.
// Defaults are chosen so that Env.Client (AdminUser) can create the object as is.

// EmptyArguments is the canonical JSON of the default arguments of MakeToolCall.
const EmptyArguments = "{}"

// Digest returns "sha256:<hex>" of data, the form of argumentsDigest, resultDigest and
// specDigest.
func Digest(data []byte) string { return frame.DigestOf(data) }

// ToolCallWrapper builds a ToolCall.
type ToolCallWrapper struct{ toolgatev1alpha1.ToolCall }

// MakeToolCall returns a ToolCall of tool "echo" by AdminUser with arguments {}.
func MakeToolCall(name, ns string) *ToolCallWrapper {
	return &ToolCallWrapper{toolgatev1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: toolgatev1alpha1.ToolCallSpec{
			Tool:      "echo",
			Requester: AdminUser,
			Arguments: runtime.RawExtension{Raw: []byte(EmptyArguments)},
		},
	}}
}

// Obj returns a deep copy of the ToolCall.
func (w *ToolCallWrapper) Obj() *toolgatev1alpha1.ToolCall { return w.DeepCopy() }

// Tool sets spec.tool.
func (w *ToolCallWrapper) Tool(name string) *ToolCallWrapper { w.Spec.Tool = name; return w }

// Scope sets spec.scope.
func (w *ToolCallWrapper) Scope(scope string) *ToolCallWrapper { w.Spec.Scope = scope; return w }

// Session sets spec.session.
func (w *ToolCallWrapper) Session(session string) *ToolCallWrapper {
	w.Spec.Session = session
	return w
}

// TTL sets spec.ttlSecondsAfterFinished: how long the call is kept after it finished.
func (w *ToolCallWrapper) TTL(seconds int32) *ToolCallWrapper {
	w.Spec.TTLSecondsAfterFinished = &seconds
	return w
}

// Requester sets spec.requester.
func (w *ToolCallWrapper) Requester(user string) *ToolCallWrapper {
	w.Spec.Requester = user
	return w
}

// Args sets spec.arguments: []byte and json.RawMessage are used as they are, anything else
// (a map, a struct, even a string or a slice to test rejections) is marshalled to JSON.
func (w *ToolCallWrapper) Args(v any) *ToolCallWrapper {
	w.Spec.Arguments = runtime.RawExtension{Raw: mustJSON(v)}
	return w
}

// Cancel sets spec.cancel: the call is created already cancelled.
func (w *ToolCallWrapper) Cancel() *ToolCallWrapper { w.Spec.Cancel = true; return w }

// Label sets a label.
func (w *ToolCallWrapper) Label(key, value string) *ToolCallWrapper {
	metav1.SetMetaDataLabel(&w.ObjectMeta, key, value)
	return w
}

// Phase sets status.phase.
func (w *ToolCallWrapper) Phase(p toolgatev1alpha1.ToolCallPhase) *ToolCallWrapper {
	w.Status.Phase = p
	return w
}

// Verdict sets status.verdict.
func (w *ToolCallWrapper) Verdict(v toolgatev1alpha1.Verdict) *ToolCallWrapper {
	w.Status.Verdict = v
	return w
}

// ArgumentsDigest sets status.argumentsDigest.
func (w *ToolCallWrapper) ArgumentsDigest(d string) *ToolCallWrapper {
	w.Status.ArgumentsDigest = d
	return w
}

// Result sets status.result and status.resultDigest (the digest of the result's JSON).
func (w *ToolCallWrapper) Result(r *toolgatev1alpha1.ToolResult) *ToolCallWrapper {
	w.Status.Result = r
	w.Status.ResultDigest = ""
	if r != nil {
		w.Status.ResultDigest = Digest(mustJSON(r))
	}
	return w
}

// Condition sets (adds or replaces by type) a status condition.
func (w *ToolCallWrapper) Condition(c metav1.Condition) *ToolCallWrapper {
	meta.SetStatusCondition(&w.Status.Conditions, c)
	return w
}

// OKResult returns a successful result with the given content (marshalled to JSON).
func OKResult(content any) *toolgatev1alpha1.ToolResult {
	return &toolgatev1alpha1.ToolResult{OK: true, Content: &apiextensionsv1.JSON{Raw: mustJSON(content)}}
}

// ErrorResult returns an isError result with a reason and the message the model sees.
func ErrorResult(reason, message string) *toolgatev1alpha1.ToolResult {
	return &toolgatev1alpha1.ToolResult{IsError: true, Reason: reason, Error: message}
}

// ToolCallApprovalWrapper builds a ToolCallApproval.
type ToolCallApprovalWrapper struct {
	toolgatev1alpha1.ToolCallApproval
}

// MakeToolCallApproval returns an Approve by AdminUser for the digest of EmptyArguments
// (the default arguments of MakeToolCall), bound to no call yet (spec.callUID is required:
// set it with For or CallUID). Name it after the call it answers.
func MakeToolCallApproval(name, ns string) *ToolCallApprovalWrapper {
	return &ToolCallApprovalWrapper{toolgatev1alpha1.ToolCallApproval{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: toolgatev1alpha1.ToolCallApprovalSpec{
			Decision:        toolgatev1alpha1.DecisionApprove,
			ArgumentsDigest: Digest([]byte(EmptyArguments)),
			Approver:        AdminUser,
		},
	}}
}

// Obj returns a deep copy of the ToolCallApproval.
func (w *ToolCallApprovalWrapper) Obj() *toolgatev1alpha1.ToolCallApproval { return w.DeepCopy() }

// Decision sets spec.decision.
func (w *ToolCallApprovalWrapper) Decision(d toolgatev1alpha1.ApprovalDecision) *ToolCallApprovalWrapper {
	w.Spec.Decision = d
	return w
}

// Deny sets spec.decision to Deny.
func (w *ToolCallApprovalWrapper) Deny() *ToolCallApprovalWrapper {
	return w.Decision(toolgatev1alpha1.DecisionDeny)
}

// For binds the approval to call as the approver's client does (agentclient.NewApproval):
// spec.callUID, the call's status.argumentsDigest when it has one, and an ownerReference
// to the call (not the controller, not blocking its deletion).
func (w *ToolCallApprovalWrapper) For(call *toolgatev1alpha1.ToolCall) *ToolCallApprovalWrapper {
	w.CallUID(call.UID)
	if call.Status.ArgumentsDigest != "" {
		w.Spec.ArgumentsDigest = call.Status.ArgumentsDigest
	}
	w.OwnerReferences = []metav1.OwnerReference{agentclient.ApprovalOwner(call)}
	return w
}

// CallUID sets spec.callUID only.
func (w *ToolCallApprovalWrapper) CallUID(uid types.UID) *ToolCallApprovalWrapper {
	w.Spec.CallUID = string(uid)
	return w
}

// ArgumentsDigest sets spec.argumentsDigest.
func (w *ToolCallApprovalWrapper) ArgumentsDigest(d string) *ToolCallApprovalWrapper {
	w.Spec.ArgumentsDigest = d
	return w
}

// Approver sets spec.approver.
func (w *ToolCallApprovalWrapper) Approver(user string) *ToolCallApprovalWrapper {
	w.Spec.Approver = user
	return w
}

// Reason sets spec.reason.
func (w *ToolCallApprovalWrapper) Reason(reason string) *ToolCallApprovalWrapper {
	w.Spec.Reason = reason
	return w
}

// mustJSON marshals v, passing []byte and json.RawMessage through; it panics on error
// (a test's own mistake).
func mustJSON(v any) []byte {
	switch t := v.(type) {
	case []byte:
		return t
	case json.RawMessage:
		return t
	}
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("toolgatetest: marshalling %T: %v", v, err))
	}
	return data
}
