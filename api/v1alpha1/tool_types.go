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

// NamespacedToolSpec is a ToolSpec registered in a scope of its namespace.
// +kubebuilder:validation:XValidation:rule="!has(self.warmPool) || !has(self.warmPool.namespaces) || size(self.warmPool.namespaces) == 0",message="warmPool.namespaces is for ClusterTools: a Tool's pool is kept in the Tool's own namespace"
type NamespacedToolSpec struct {
	// scope is the name of a ToolScope in the same namespace the tool registers in.
	// Empty: the namespace layer, visible to every scope of the namespace that permits it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Scope string `json:"scope,omitempty"`

	ToolSpec `json:",inline"`
}

// Tool registers a tool in a namespace (optionally in one of its ToolScopes): what the model
// sees and the sandboxed body that runs when a ToolCall names it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=toolgate
// +kubebuilder:printcolumn:name="Tool",type=string,JSONPath=`.status.resolvedName`
// +kubebuilder:printcolumn:name="Scope",type=string,JSONPath=`.spec.scope`
// +kubebuilder:printcolumn:name="Registered",type=string,JSONPath=`.status.conditions[?(@.type=="Registered")].status`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.body.image`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="has(self.spec.name) || self.metadata.name.matches('^[a-zA-Z0-9_-]{1,64}$')",message="spec.name is required when metadata.name is not a valid tool name (^[a-zA-Z0-9_-]{1,64}$)"
type Tool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the tool. Required.
	// +required
	Spec NamespacedToolSpec `json:"spec"`

	// status is the registration state, written by the controller.
	// +optional
	Status ToolStatus `json:"status,omitempty"`
}

// ToolList is a list of Tools.
// +kubebuilder:object:root=true
type ToolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tool `json:"items"`
}
