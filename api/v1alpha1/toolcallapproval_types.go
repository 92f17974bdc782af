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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ApprovalDecision is a person's answer to a call awaiting approval.
// +kubebuilder:validation:Enum=Approve;Deny
type ApprovalDecision string

const (
	// DecisionApprove lets the call run.
	DecisionApprove ApprovalDecision = "Approve"
	// DecisionDeny refuses the call (ApprovalDenied); final.
	DecisionDeny ApprovalDecision = "Deny"
)

// ToolCallApprovalSpec is one answer to one call, bound to that call's uid and to the exact
// arguments approved.
type ToolCallApprovalSpec struct {
	// callUID is the metadata.uid of the ToolCall this approval answers, as the approver's
	// client read it from the call it showed. An approval answers that one call: a later call
	// of the same name (another uid) is not answered by it (ApprovalCallMismatch). Required.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	CallUID string `json:"callUID"`

	// decision is Approve or Deny. Required.
	// +required
	Decision ApprovalDecision `json:"decision"`

	// argumentsDigest must equal the call's status.argumentsDigest; otherwise the approval is
	// a refusal (ApprovalDigestMismatch). Required; "sha256:<64 hex>".
	// +required
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	ArgumentsDigest string `json:"argumentsDigest"`

	// approver is the person answering. The API server stamps it: the toolgate-approver
	// admission policy sets it to the authenticated user who creates the approval
	// (request.userInfo.username) whatever the client sent, and the toolgate-identity policy
	// checks it and keeps it unchanged afterwards. It must not be the call's requester
	// (SelfApproval). A client need not set it, so the schema does not require it (as
	// ToolCall's spec.requester); the toolgate-identity policy refuses a create that reaches
	// it without one. 1 to 512 characters.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Approver string `json:"approver,omitempty"`

	// reason explains the decision, for the audit trail. At most 1024 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// ToolCallApprovalStatus records what the controller did with the approval.
type ToolCallApprovalStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// consumedBy is the metadata.uid of the call this approval decided (approved or
	// denied), written once by the controller before the call moves on. An approval
	// consumed by one call never answers another (ApprovalAlreadyConsumed).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	ConsumedBy string `json:"consumedBy,omitempty"`

	// conditions: Consumed (reasons Applied, SelfApproval, DigestMismatch, ApprovalTimeout,
	// ApprovalCallMismatch, ApprovalStale, ApprovalAlreadyConsumed). True/Applied: the answer
	// decided the call (approved, or denied as asked). False: it was refused: SelfApproval
	// (the call keeps waiting for another approver), DigestMismatch (another arguments digest
	// than the call's), ApprovalTimeout (the window had closed), ApprovalCallMismatch (another
	// call's uid), ApprovalStale (created before the call was parked), ApprovalAlreadyConsumed
	// (it decided another call).
	// An approval for a call that is not awaiting approval is not marked.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ToolCallApproval answers a ToolCall awaiting approval; it has the same name as the call,
// in the same namespace, and names the call's uid in spec.callUID (the approver's client
// also sets an ownerReference to the call, so that it is garbage-collected with it). RBAC
// on this resource separates approvers from agents.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=toolgate
// +kubebuilder:printcolumn:name="Decision",type=string,JSONPath=`.spec.decision`
// +kubebuilder:printcolumn:name="Approver",type=string,JSONPath=`.spec.approver`
// +kubebuilder:printcolumn:name="Consumed",type=string,JSONPath=`.status.conditions[?(@.type=="Consumed")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ToolCallApproval struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the answer. Required; immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
	Spec ToolCallApprovalSpec `json:"spec"`

	// status records whether the answer was applied, written by the controller.
	// +optional
	Status ToolCallApprovalStatus `json:"status,omitempty"`
}

// ToolCallApprovalList is a list of ToolCallApprovals.
// +kubebuilder:object:root=true
type ToolCallApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ToolCallApproval `json:"items"`
}
