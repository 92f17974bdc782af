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

// ClusterTool registers a tool for every namespace: the global layer, below every scope's and
// namespace's own Tools in resolution order.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=toolgate
// +kubebuilder:printcolumn:name="Tool",type=string,JSONPath=`.status.resolvedName`
// +kubebuilder:printcolumn:name="Registered",type=string,JSONPath=`.status.conditions[?(@.type=="Registered")].status`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.body.image`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="has(self.spec.name) || self.metadata.name.matches('^[a-zA-Z0-9_-]{1,64}$')",message="spec.name is required when metadata.name is not a valid tool name (^[a-zA-Z0-9_-]{1,64}$)"
type ClusterTool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the tool. Required.
	// +required
	// +kubebuilder:validation:XValidation:rule="!has(self.warmPool) || self.warmPool.size == 0 || (has(self.warmPool.namespaces) && size(self.warmPool.namespaces) > 0)",message="warmPool.namespaces is required for a ClusterTool with a warm pool: a call's Pod runs in the call's namespace, so the pool must name the namespaces it is kept in"
	Spec ToolSpec `json:"spec"`

	// status is the registration state, written by the controller.
	// +optional
	Status ToolStatus `json:"status,omitempty"`
}

// ClusterToolList is a list of ClusterTools.
// +kubebuilder:object:root=true
type ClusterToolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTool `json:"items"`
}
