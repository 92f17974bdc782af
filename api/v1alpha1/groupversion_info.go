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

// Package v1alpha1 holds the toolgate.dev/v1alpha1 API: Tool, ClusterTool, ToolScope,
// ToolPolicy, ToolCall and ToolCallApproval.
//
// Validation lives in the CRD schema (markers in this package) and in CEL rules the
// kube-apiserver evaluates itself; docs/api.md lists every rule.
// +kubebuilder:object:generate=true
// +groupName=toolgate.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The package registers its kinds with apimachinery alone (no controller-runtime) so that
// anything may import the API types without pulling in a client.
var (
	// GroupVersion is the group and version of this API: toolgate.dev/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: "toolgate.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource returns the group-qualified resource, e.g. Resource("toolcalls").
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Tool{}, &ToolList{},
		&ClusterTool{}, &ClusterToolList{},
		&ToolScope{}, &ToolScopeList{},
		&ToolPolicy{}, &ToolPolicyList{},
		&ToolCall{}, &ToolCallList{},
		&ToolCallApproval{}, &ToolCallApprovalList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
