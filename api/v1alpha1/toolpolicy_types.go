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

// PolicyStage is the pipeline stage a ToolPolicy's rules run in.
// +kubebuilder:validation:Enum=PreExecute;Guard;PostExecute
type PolicyStage string

const (
	// StagePreExecute: an ordered waterfall before execution; the first Deny stops, Ask parks the call.
	StagePreExecute PolicyStage = "PreExecute"
	// StageGuard: guards may only lower the verdict (Allow → Ask → Deny), never raise it.
	StageGuard PolicyStage = "Guard"
	// StagePostExecute: rules over the result: Accept, Block or Redact.
	StagePostExecute PolicyStage = "PostExecute"
)

// PolicyAction is what a PostExecute rule does with a result when its expression is true.
// +kubebuilder:validation:Enum=Accept;Block;Redact
type PolicyAction string

const (
	// ActionAccept: the result goes to the model unchanged.
	ActionAccept PolicyAction = "Accept"
	// ActionBlock: the model gets an isError result carrying the rule's message instead.
	ActionBlock PolicyAction = "Block"
	// ActionRedact: the result's content is replaced by the rule's replace expression.
	ActionRedact PolicyAction = "Redact"
)

// ToolPolicySpec is an ordered set of CEL rules for one stage of the pipeline.
// +kubebuilder:validation:XValidation:rule="self.stage != 'PostExecute' || self.rules.all(r, has(r.action) && !has(r.verdict))",message="rules of a PostExecute policy set action, not verdict"
// +kubebuilder:validation:XValidation:rule="self.stage == 'PostExecute' || self.rules.all(r, has(r.verdict) && !has(r.action))",message="rules of a PreExecute or Guard policy set verdict, not action"
type ToolPolicySpec struct {
	// stage is where the rules run: PreExecute, Guard or PostExecute. Required.
	// +required
	Stage PolicyStage `json:"stage"`

	// order sorts the policies of one stage, lowest first (ties by name). Default 0;
	// -1000 to 1000.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=-1000
	// +kubebuilder:validation:Maximum=1000
	Order int32 `json:"order"`

	// tools selects the calls the policy sees by tool name (as the model sees it).
	// Empty: every tool. At most 256 names.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:Pattern=`^[a-zA-Z0-9_-]{1,64}$`
	Tools []string `json:"tools,omitempty"`

	// rules are evaluated in list order; see the stage for how verdicts combine.
	// Required: 1 to 64 rules, unique by name.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Rules []PolicyRule `json:"rules"`

	// approvalWindow overrides the tool's approvalWindow for calls this policy sends to Ask.
	// Optional; between 1s and 7 days (168h).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('168h')",message="approvalWindow must be between 1s and 168h"
	ApprovalWindow *metav1.Duration `json:"approvalWindow,omitempty"`
}

// PolicyRule is one CEL rule. Its expression sees {tool, arguments, call} (and result in
// PostExecute) and yields a bool; when true, the rule's verdict or action applies.
// +kubebuilder:validation:XValidation:rule="has(self.replace) == (has(self.action) && self.action == 'Redact')",message="replace is required for action Redact and allowed only there"
type PolicyRule struct {
	// name identifies the rule in conditions and events. Required; a DNS label.
	// +required
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// expression is a CEL expression yielding a bool. Required; at most 4096 characters.
	// Compiled by the controller (Ready=False, PolicyCompileError if it does not compile).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression"`

	// verdict applies when the expression is true (PreExecute and Guard policies only):
	// Allow, Ask or Deny.
	// +optional
	Verdict Verdict `json:"verdict,omitempty"`

	// action applies when the expression is true (PostExecute policies only):
	// Accept, Block or Redact.
	// +optional
	Action PolicyAction `json:"action,omitempty"`

	// replace is a CEL expression yielding the result's new content; only with action Redact.
	// At most 4096 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Replace string `json:"replace,omitempty"`

	// message explains the verdict or action to the model and in events. At most 1024 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// ToolPolicyStatus is the compiled state of a ToolPolicy, written by the controller.
type ToolPolicyStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (reasons Ready, PolicyCompileError).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ToolPolicy is a set of CEL rules that decide, at one stage, whether calls run (PreExecute,
// Guard) or what their results become (PostExecute), for the ToolCalls of its namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=toolgate
// +kubebuilder:printcolumn:name="Stage",type=string,JSONPath=`.spec.stage`
// +kubebuilder:printcolumn:name="Order",type=integer,JSONPath=`.spec.order`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ToolPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the stage and the rules. Required.
	// +required
	Spec ToolPolicySpec `json:"spec"`

	// status is the compiled state, written by the controller.
	// +optional
	Status ToolPolicyStatus `json:"status,omitempty"`
}

// ToolPolicyList is a list of ToolPolicies.
// +kubebuilder:object:root=true
type ToolPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ToolPolicy `json:"items"`
}
