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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// WorkspacePath is where a tool body's Pod mounts its session's workspace.
const WorkspacePath = podcontract.WorkspaceMountPath

// WorkspaceAccess is how a tool's Pod mounts its session's workspace (Sandbox.workspace).
// +kubebuilder:validation:Enum=ReadWrite;ReadOnly
type WorkspaceAccess string

const (
	// WorkspaceReadWrite mounts the workspace writable; the call is a barrier in its session
	// (it waits for every earlier call and every later call waits for it).
	WorkspaceReadWrite WorkspaceAccess = "ReadWrite"
	// WorkspaceReadOnly mounts the workspace read-only; such calls run in parallel between
	// the session's barriers.
	WorkspaceReadOnly WorkspaceAccess = "ReadOnly"
)

// WorkspaceAccessMode is the access mode of a session's PersistentVolumeClaim.
// +kubebuilder:validation:Enum=ReadWriteOnce;ReadWriteOncePod;ReadWriteMany
type WorkspaceAccessMode string

// Workspace is a scope's declaration of session workspaces: each spec.session of a call
// made in the scope (or in a scope below it that declares none) gets a PersistentVolumeClaim
// of its own, created by the operator on the first call whose tool asks for a workspace and
// deleted once the session has been idle for retention (docs/workspaces.md, "Session
// workspaces").
type Workspace struct {
	// storageClassName is the StorageClass of the sessions' claims. Default: the operator's
	// --workspace-storage-class (chart value workspace.storageClassName); empty there too,
	// the cluster's default StorageClass. At most 253 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	StorageClassName *string `json:"storageClassName,omitempty"`

	// size is the storage each session's claim requests. Default 1Gi; positive, at most 1Ti.
	// +optional
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0')) && quantity(string(self)).compareTo(quantity('1Ti')) <= 0",message="size must be positive and at most 1Ti"
	Size *resource.Quantity `json:"size,omitempty"`

	// accessMode is the claims' access mode: ReadWriteOnce (default; the session's Pods
	// must share a node, which a one-node cluster or a barrier-ordered session gives),
	// ReadWriteOncePod (one Pod at a time: ReadOnly calls of a session then wait for each
	// other), or ReadWriteMany (needs a storage class that offers it).
	// +optional
	// +kubebuilder:default=ReadWriteOnce
	AccessMode WorkspaceAccessMode `json:"accessMode,omitempty"`

	// retention is how long a session's claim is kept after the end of the session's last
	// call; then the operator deletes it, and its files with it. A call of the session that
	// comes later gets a new, empty workspace. Default 1h; between 10s and 720h (30 days).
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('720h')",message="retention must be between 10s and 720h"
	Retention *metav1.Duration `json:"retention,omitempty"`
}

// Reasons of calls whose tool asks for a session workspace (result and Executed=False).
const (
	// ReasonWorkspaceNeedsSession: the tool mounts a session workspace and the call has no
	// spec.session; it was not run.
	ReasonWorkspaceNeedsSession = "WorkspaceNeedsSession"
	// ReasonNoWorkspace: the tool mounts a session workspace and no scope on the call's chain
	// declares one (ToolScope spec.workspace); it was not run.
	ReasonNoWorkspace = "NoWorkspace"
	// ReasonWorkspaceUnbound: the session's PersistentVolumeClaim could not be created (a
	// quota, an admission policy) or was not bound (no provisioner, an unknown storage class,
	// no capacity) before the attempt's deadline; the body never started. The Executed
	// condition names the claim.
	ReasonWorkspaceUnbound = "WorkspaceUnbound"
	// ReasonWorkspaceCredentialsUnrecorded: the session's claim cannot carry the record of
	// the credentials its calls redact (toolgate.dev/workspace-credentials): a ReadWrite
	// call of a tool with credentials would raise it past 32 Secret keys, or the record is
	// not one the operator wrote (the annotation was altered). The body never started; the
	// Executed condition says which.
	ReasonWorkspaceCredentialsUnrecorded = "WorkspaceCredentialsUnrecorded"
)
