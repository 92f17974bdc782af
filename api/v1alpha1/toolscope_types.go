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

// ToolScopeSpec narrows which tools are visible, and to whom, for calls made in the scope.
// A tool is visible in a scope only if every scope on its chain (the scope, its parent, ...)
// permits it; deny wins over allow, and a child can only narrow what its ancestors allow.
type ToolScopeSpec struct {
	// parent is the name of another ToolScope in the same namespace whose rules also apply.
	// Empty: the scope hangs directly below the namespace layer. Must not be the scope itself.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Parent string `json:"parent,omitempty"`

	// allow lists the tool names (as the model sees them) the scope permits.
	// Empty: every tool its parent permits. At most 1024 names.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:Pattern=`^[a-zA-Z0-9_-]{1,64}$`
	Allow []string `json:"allow,omitempty"`

	// deny lists tool names the scope refuses, whatever allow says. At most 1024 names.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1024
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:Pattern=`^[a-zA-Z0-9_-]{1,64}$`
	Deny []string `json:"deny,omitempty"`

	// subjects lists the users (request.userInfo.username, e.g.
	// "system:serviceaccount:agents:coder") who may call tools in this scope; a requester
	// outside them is denied with NotASubject. Empty: anyone allowed to create ToolCalls.
	// At most 256 names.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	Subjects []string `json:"subjects,omitempty"`

	// runtimeClassName, when set, is the RuntimeClass every call made in this scope, or in a
	// scope below it, must run under: a call whose tool would run under anything else (its
	// sandbox.runtimeClassName, else the operator's --default-runtime-class) is refused with
	// RuntimeClassRequired before its body runs.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	RuntimeClassName *string `json:"runtimeClassName,omitempty"`

	// approvalSinks receive a signed CloudEvent when a call made in this scope, or in a scope
	// below it, asks for approval and when that approval is answered or expires (the sinks of
	// the scope and of every ancestor, plus the operator's default sink). At most 8, unique
	// by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	ApprovalSinks []ApprovalSink `json:"approvalSinks,omitempty"`

	// workspace declares a session workspace: each spec.session of the calls made in this
	// scope, or in a scope below it that declares none, gets a PersistentVolumeClaim of its
	// own, which tools that ask for it (sandbox.workspace) mount at /workspace. Absent: the
	// nearest ancestor's declaration applies; none on the chain, a call whose tool asks for
	// a workspace is refused (NoWorkspace). A change applies to sessions whose claim is
	// created afterwards.
	// +optional
	Workspace *Workspace `json:"workspace,omitempty"`

	// sessionSandbox runs the calls of each session (spec.session, per requester) made in
	// this scope, or in a scope below it that declares none, in long-lived sandbox Pods —
	// one per tool of the session — instead of a Pod per call, every per-call promise kept
	// (docs/session-sandboxes.md). Absent: the nearest ancestor's declaration applies; none
	// on the chain, every call runs in a Pod of its own.
	// +optional
	SessionSandbox *SessionSandbox `json:"sessionSandbox,omitempty"`

	// admission puts the Jobs of calls made in this scope, or in a scope below it that
	// declares none, behind a Kueue LocalQueue: they are created suspended and run when
	// Kueue admits them (docs/bursts.md). Absent: the nearest ancestor's declaration
	// applies; none on the chain, the operator's --admission-queue (none by default).
	// +optional
	Admission *Admission `json:"admission,omitempty"`
}

// SessionSandbox is a scope's declaration of session sandbox Pods.
type SessionSandbox struct {
	// idleTimeout is how long a session's Pod is kept after its last call ended; then it is
	// deleted (a later call of the session starts a new one; the workspace stays for its own
	// retention). Default: the operator's --session-idle-timeout (5m); capped at its
	// --session-idle-ceiling (1h). Between 10s and 24h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="idleTimeout must be between 10s and 24h"
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`
}

// Admission is a scope's declaration of Kueue admission for its calls' Jobs.
type Admission struct {
	// queueName is the Kueue LocalQueue, in the call's namespace, the calls' Jobs are
	// submitted to (label kueue.x-k8s.io/queue-name); empty: the operator's
	// --admission-queue.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	QueueName string `json:"queueName,omitempty"`

	// maxWait bounds how long an attempt waits for admission; past it the call ends Failed,
	// NotAdmitted (never DeadlineExceeded: the tool's timeout counts from admission).
	// Default: the operator's --admission-max-wait (10m). Between 1s and 24h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="maxWait must be between 1s and 24h"
	MaxWait *metav1.Duration `json:"maxWait,omitempty"`
}

// ToolScopeStatus is the resolved state of a ToolScope, written by the controller.
type ToolScopeStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (reasons Ready, ScopeCycle, UnknownParent).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// chain is the resolved ancestor chain, the scope itself first, then its parent, and so on.
	// +optional
	// +listType=atomic
	Chain []string `json:"chain,omitempty"`
}

// ToolScope is a named layer of tool visibility and authority inside a namespace: Tools
// register in it, ToolCalls are made in it, and it may restrict both tools and callers.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=toolgate
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parent`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.parent) || self.spec.parent != self.metadata.name",message="spec.parent must not name the scope itself"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="a ToolScope's name must be a DNS label: spec.scope and spec.parent refer to it"
type ToolScope struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec sets the scope's parent and restrictions. An empty spec permits everything its
	// parent does.
	// +optional
	Spec ToolScopeSpec `json:"spec,omitempty"`

	// status is the resolved state, written by the controller.
	// +optional
	Status ToolScopeStatus `json:"status,omitempty"`
}

// ToolScopeList is a list of ToolScopes.
// +kubebuilder:object:root=true
type ToolScopeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ToolScope `json:"items"`
}
