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

package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ToolCallPhase is where a ToolCall is in its life.
// +kubebuilder:validation:Enum=Pending;AwaitingApproval;Queued;Running;Succeeded;Failed;Denied
type ToolCallPhase string

const (
	// PhasePending: accepted by the API, not yet through the pure stages.
	PhasePending ToolCallPhase = "Pending"
	// PhaseAwaitingApproval: a policy said Ask; waiting for a ToolCallApproval.
	PhaseAwaitingApproval ToolCallPhase = "AwaitingApproval"
	// PhaseQueued: admitted; waiting for earlier calls of its session.
	PhaseQueued ToolCallPhase = "Queued"
	// PhaseRunning: an attempt's Job exists.
	PhaseRunning ToolCallPhase = "Running"
	// PhaseSucceeded: terminal; the result is usable (result.ok).
	PhaseSucceeded ToolCallPhase = "Succeeded"
	// PhaseFailed: terminal; the body or its result failed (result.isError).
	PhaseFailed ToolCallPhase = "Failed"
	// PhaseDenied: terminal; the call never ran (result.isError).
	PhaseDenied ToolCallPhase = "Denied"
)

// IsTerminal reports whether the phase is final: Succeeded, Failed or Denied.
func (p ToolCallPhase) IsTerminal() bool {
	return p == PhaseSucceeded || p == PhaseFailed || p == PhaseDenied
}

// ToolKind is the kind of object a call resolved to.
// +kubebuilder:validation:Enum=Tool;ClusterTool
type ToolKind string

const (
	// ToolKindTool: a namespaced Tool.
	ToolKindTool ToolKind = "Tool"
	// ToolKindClusterTool: a ClusterTool.
	ToolKindClusterTool ToolKind = "ClusterTool"
)

// Patterns of the free-text fields of a ToolCall's spec. The markers spell them out (a
// marker cannot name a constant); TestPatternsAreTheMarkers keeps the two the same.
const (
	// SessionPattern is spec.session's: an identifier, never text that could pose as
	// something else where people read it.
	SessionPattern = `^[A-Za-z0-9._:/@+=-]+$`
	// NamePattern is spec.requester's and spec.requesterGroups' (user and group names as
	// the API server authenticated them): anything but control, format (bidi, zero-width)
	// and line or paragraph separator characters.
	NamePattern = `^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$`
)

// ToolCallSpec is one request to run a tool. Immutable: the arguments are frozen as written.
type ToolCallSpec struct {
	// tool is the name of the tool as the model sees it (spec.name of a Tool or ClusterTool).
	// Required; 1 to 64 of [a-zA-Z0-9_-].
	// +required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]{1,64}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable (only spec.cancel may be set)"
	Tool string `json:"tool"`

	// scope is the ToolScope (same namespace) the call is made in. Empty: the namespace layer.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable (only spec.cancel may be set)"
	Scope string `json:"scope,omitempty"`

	// session groups the calls of one requester in one scope, run in the order they were
	// issued (status.issuedRevision; see ToolSpec.concurrencySafe).
	// Empty: the call is on its own. 1 to 253 letters, digits and . _ : / @ + = - (no
	// spaces, control, escape, bidi or zero-width characters: the agent chooses it and
	// people read it).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._:/@+=-]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable (only spec.cancel may be set)"
	Session string `json:"session,omitempty"`

	// requester is the user the call is made for. The API server stamps it: the
	// toolgate-requester admission policy sets it to the authenticated user who creates the
	// call (request.userInfo.username) whatever the client sent, and the toolgate-identity
	// policy checks it and keeps it unchanged afterwards. A client need not set it, so the
	// schema does not require it (kubectl's client-side validation of a kind: List checks
	// each item against the schema before any admission); the toolgate-identity policy
	// refuses a create that reaches it without one. 1 to 512 characters, none of them a
	// control, format (bidi, zero-width) or line-separator character.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable (only spec.cancel may be set)"
	Requester string `json:"requester,omitempty"`

	// requesterGroups are the requester's groups as the API server authenticated them
	// (request.userInfo.groups), stamped on create by the toolgate-requester admission
	// policy like requester, and immutable. Policies read them as call.requesterGroups.
	// A client need not set it; any value it sends is replaced. At most 256 groups of at
	// most 512 characters each, with requester's pattern.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^[^\p{Cc}\p{Cf}\p{Zl}\p{Zp}]*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable (only spec.cancel may be set)"
	RequesterGroups []string `json:"requesterGroups,omitempty"`

	// arguments is the JSON object handed to the tool. Required; must be an object.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable (only spec.cancel may be set)"
	Arguments runtime.RawExtension `json:"arguments"`

	// ttlSecondsAfterFinished is how long the call is kept after it reached a terminal phase
	// (status.completionTime); then the operator deletes it, and with it (by ownership) its
	// Jobs, their Pods and its ToolCallApproval. 0: deleted as soon as it finished. Unset:
	// the resolved tool's spec.callTTLSecondsAfterFinished, else the operator's
	// --toolcall-ttl (default 24h; 0 there keeps calls forever). Immutable, as the whole spec.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable (only spec.cancel may be set)"
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// cancel asks the operator to stop the call: its Job (and Pod) is deleted and the call
	// ends Failed with an isError result, reason Cancelled, frozen like any other result; the
	// ToolCall stays until retention removes it. A call already terminal is unchanged. The
	// only field of the spec that may change after create, and only from false to true: a
	// cancelled call stays cancelled. The toolgate-cancel admission policy lets only the
	// call's requester, or a user granted the verb "cancel" on toolcalls, set it.
	// +optional
	Cancel bool `json:"cancel,omitempty"`
}

// ToolCallStatus is the walk of a call through the pipeline, written by the controller.
// The transition rules below make the outcome tamper-proof once written.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.phase) || !(oldSelf.phase in ['Succeeded', 'Failed', 'Denied']) || (has(self.phase) && self.phase == oldSelf.phase)",message="phase is terminal and cannot change"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.verdict) || oldSelf.verdict != 'Deny' || (has(self.verdict) && self.verdict == 'Deny')",message="a Deny verdict is final"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.result) || (has(self.result) && self.result == oldSelf.result)",message="result is immutable once set"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.resultDigest) || (has(self.resultDigest) && self.resultDigest == oldSelf.resultDigest)",message="resultDigest is immutable once set"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.issuedRevision) || (has(self.issuedRevision) && self.issuedRevision == oldSelf.issuedRevision)",message="issuedRevision is immutable once set"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.argumentsDigest) || (has(self.argumentsDigest) && self.argumentsDigest == oldSelf.argumentsDigest)",message="argumentsDigest is immutable once set"
// +kubebuilder:validation:XValidation:rule="!has(self.phase) || !(self.phase in ['Succeeded', 'Failed', 'Denied']) || has(self.result)",message="a terminal phase requires a result"
// +kubebuilder:validation:XValidation:rule="has(self.result) == has(self.resultDigest)",message="result and resultDigest are set together"
type ToolCallStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase summarises the conditions. Once Succeeded, Failed or Denied it never changes.
	// +optional
	Phase ToolCallPhase `json:"phase,omitempty"`

	// verdict is the combined verdict of the policy stages and the approval. Deny is final.
	// +optional
	Verdict Verdict `json:"verdict,omitempty"`

	// conditions record the pipeline: Resolved, ArgumentsFrozen, ArgumentsValid, Admitted,
	// Guarded, Executed, ResultAccepted, Normalized, Completed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// argumentsDigest is "sha256:<hex>" of the canonical arguments. Immutable once set.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	ArgumentsDigest string `json:"argumentsDigest,omitempty"`

	// tool is the snapshot of the tool the call resolved to.
	// +optional
	Tool *ToolSnapshot `json:"tool,omitempty"`

	// callLabels are the call's metadata.labels when it was admitted: what policies see as
	// call.labels, at admission and again after execution (a later relabelling changes
	// neither).
	// +optional
	CallLabels map[string]string `json:"callLabels,omitempty"`

	// job is the Job of the current attempt.
	// +optional
	Job *JobReference `json:"job,omitempty"`

	// attempts lists every attempt, the first first. At most 10 (the retry limit).
	// +optional
	// +listType=map
	// +listMapKey=attempt
	// +kubebuilder:validation:MaxItems=10
	Attempts []Attempt `json:"attempts,omitempty"`

	// issuedRevision orders the calls of a session (scope, spec.session, requester) in the
	// order they were issued: the call's metadata.resourceVersion at creation, as the
	// operator first saw it (resource versions of one resource are comparable integers,
	// KEP-5504). Set at admission for a call with a session; immutable once set.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[1-9][0-9]*$`
	IssuedRevision string `json:"issuedRevision,omitempty"`

	// admittedTime is when the pure stages admitted the call.
	// +optional
	AdmittedTime *metav1.Time `json:"admittedTime,omitempty"`

	// approvalDeadline is when a call awaiting approval is denied with ApprovalTimeout.
	// +optional
	ApprovalDeadline *metav1.Time `json:"approvalDeadline,omitempty"`

	// startTime is when the first attempt's Job was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the call reached a terminal phase.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// duration is completionTime minus creationTimestamp, human-readable (e.g. "2.9s"),
	// set at completion for kubectl's column.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Duration string `json:"duration,omitempty"`

	// result is the frozen outcome the model sees. Set once, with resultDigest, never changed.
	// +optional
	Result *ToolResult `json:"result,omitempty"`

	// resultDigest is "sha256:<hex>" of the canonical result. Immutable once set.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	ResultDigest string `json:"resultDigest,omitempty"`

	// approver is the spec.approver of the ToolCallApproval that decided the call (approved
	// or denied it); empty when no approval decided it.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Approver string `json:"approver,omitempty"`

	// expiresAt is when the operator deletes the call: completionTime plus the effective
	// ttlSecondsAfterFinished (the call's, else its tool's, else the operator's default),
	// fixed when the call ends. Absent: the call is kept (no TTL applies) or not finished.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
}

// ToolSnapshot identifies the tool a call resolved to, as it was at resolution.
type ToolSnapshot struct {
	// kind is Tool or ClusterTool.
	// +required
	Kind ToolKind `json:"kind"`

	// name is the object's metadata.name (not the model-facing name).
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// scope is the ToolScope the tool is registered in; empty for the namespace layer and
	// for ClusterTools.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Scope string `json:"scope,omitempty"`

	// specDigest is the tool's status.specDigest at resolution.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	SpecDigest string `json:"specDigest,omitempty"`

	// generation is the tool's metadata.generation at resolution.
	// +optional
	Generation int64 `json:"generation,omitempty"`

	// spec is the tool's spec as the call was admitted with it: the call runs this body with
	// these settings even if the Tool is edited or deleted afterwards.
	// +optional
	Spec *ToolSpec `json:"spec,omitempty"`

	// annotations are the tool's metadata.annotations at resolution, except kubectl's
	// kubectl.kubernetes.io/last-applied-configuration (a copy of the spec): what policies
	// see as tool.annotations, at admission and again after execution.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// JobReference names a Job in the call's namespace.
type JobReference struct {
	// name of the Job.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// Attempt is one run of the body: one Job.
type Attempt struct {
	// attempt is the 1-based number of the attempt.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	Attempt int32 `json:"attempt"`

	// jobName is the attempt's Job.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	JobName string `json:"jobName,omitempty"`

	// startTime is when the attempt's Job was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the attempt's outcome was read.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// reason is the attempt's failure reason (e.g. OOMKilled); empty while running or on success.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`

	// path is how the attempt ran: Cold (a Job of its own), Warm (a claimed pool Pod) or
	// Session (its session's sandbox Pod). Absent: Cold (calls admitted before warm pools
	// existed).
	// +optional
	Path ExecutionPath `json:"path,omitempty"`

	// podName is the warm pool Pod the attempt claimed (Warm), or the session Pod it ran in
	// (Session).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PodName string `json:"podName,omitempty"`

	// handoverTime is when the frozen arguments reached the Pod's runner (Warm, Session;
	// written with the attempt's outcome, absent when the operator restarted meanwhile).
	// startTime is when the Pod was claimed, completionTime when the outcome was read.
	// +optional
	HandoverTime *metav1.Time `json:"handoverTime,omitempty"`

	// egress is what the egress proxy saw of the attempt (tools with sandbox.egress only),
	// written with the attempt's outcome: destinations and counts, never content.
	// +optional
	Egress *EgressLog `json:"egress,omitempty"`
}

// ExecutionPath is how an attempt's body ran.
// +kubebuilder:validation:Enum=Cold;Warm;Session
type ExecutionPath string

// Execution paths.
const (
	// PathCold runs the attempt in a Job created for it.
	PathCold ExecutionPath = "Cold"
	// PathWarm runs the attempt in a claimed Pod of the tool's warm pool.
	PathWarm ExecutionPath = "Warm"
	// PathSession runs the attempt in its session's sandbox Pod (ToolScope sessionSandbox).
	PathSession ExecutionPath = "Session"
)

// ToolResult is the frozen outcome of a call, shaped for the model (an MCP tool result).
// It never carries host configuration.
type ToolResult struct {
	// ok is true when the tool produced a usable result.
	// +optional
	OK bool `json:"ok,omitempty"`

	// isError is true for every failure, denial included (MCP isError).
	// +optional
	IsError bool `json:"isError,omitempty"`

	// content is the tool's output: any JSON value.
	// +optional
	Content *apiextensionsv1.JSON `json:"content,omitempty"`

	// error is the message the model sees for a failure. At most 32768 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Error string `json:"error,omitempty"`

	// reason is the failure's machine-readable reason (one of the Reason constants).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`

	// meta carries small facts about the result (e.g. truncation, exit code). At most 32 keys.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Meta map[string]string `json:"meta,omitempty"`
}

// ToolCall asks toolgate to run a tool with a set of arguments; the controller walks it
// through the pipeline and writes one frozen result into its status.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=tc,categories=toolgate
// +kubebuilder:printcolumn:name="Tool",type=string,JSONPath=`.spec.tool`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.verdict`
// +kubebuilder:printcolumn:name="Duration",type=string,JSONPath=`.status.duration`
// +kubebuilder:printcolumn:name="Requester",type=string,JSONPath=`.spec.requester`,priority=1
// +kubebuilder:printcolumn:name="Session",type=string,JSONPath=`.spec.session`,priority=1
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.status.expiresAt`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || has(self.status)",message="status cannot be removed"
type ToolCall struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the request. Required; immutable but for cancel, which may only be set
	// (false to true): every other field has a rule "self == oldSelf" of its own (one rule
	// over the whole spec but cancel would exceed the CEL cost budget, the arguments being
	// unbounded), and the rule below keeps optional fields from being added or removed
	// (TestSpecImmutabilityCoversEveryField fails on a field without both).
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.scope) == has(oldSelf.scope) && has(self.session) == has(oldSelf.session) && has(self.requester) == has(oldSelf.requester) && has(self.requesterGroups) == has(oldSelf.requesterGroups) && has(self.ttlSecondsAfterFinished) == has(oldSelf.ttlSecondsAfterFinished)",message="spec is immutable (only spec.cancel may be set)"
	// +kubebuilder:validation:XValidation:rule="!oldSelf.?cancel.orValue(false) || self.?cancel.orValue(false)",message="spec.cancel cannot be unset: a cancelled call stays cancelled"
	Spec ToolCallSpec `json:"spec"`

	// status is the pipeline's record and the result, written by the controller.
	// +optional
	Status ToolCallStatus `json:"status,omitempty"`
}

// ToolCallList is a list of ToolCalls.
// +kubebuilder:object:root=true
type ToolCallList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ToolCall `json:"items"`
}
