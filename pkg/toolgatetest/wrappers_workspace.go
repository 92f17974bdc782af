package toolgatetest

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
)

// Workspace sets spec.sandbox.workspace: the tool mounts its call's session workspace
// (ReadWrite or ReadOnly).
func (s ToolSpecSetters[W]) Workspace(access toolgatev1alpha1.WorkspaceAccess) W {
	s.spec.Sandbox.Workspace = access
	return s.w
}

// Workspace declares spec.workspace on the scope: each session of its calls gets a claim
// of size (e.g. "1Gi"), deleted retention after the session's last call.
func (w *ToolScopeWrapper) Workspace(size string, retention time.Duration) *ToolScopeWrapper {
	q := resource.MustParse(size)
	w.Spec.Workspace = &toolgatev1alpha1.Workspace{Size: &q, Retention: &metav1.Duration{Duration: retention}}
	return w
}

// WorkspaceStorageClass sets spec.workspace.storageClassName (after Workspace).
func (w *ToolScopeWrapper) WorkspaceStorageClass(class string) *ToolScopeWrapper {
	if w.Spec.Workspace == nil {
		w.Spec.Workspace = &toolgatev1alpha1.Workspace{}
	}
	w.Spec.Workspace.StorageClassName = &class
	return w
}

// SessionSandbox sets spec.sessionSandbox: the scope's session calls run in session Pods,
// kept idle for idle (0: the operator's default).
func (w *ToolScopeWrapper) SessionSandbox(idle time.Duration) *ToolScopeWrapper {
	w.Spec.SessionSandbox = &toolgatev1alpha1.SessionSandbox{}
	if idle > 0 {
		w.Spec.SessionSandbox.IdleTimeout = &metav1.Duration{Duration: idle}
	}
	return w
}
