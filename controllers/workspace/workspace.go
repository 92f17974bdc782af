// Package workspace gives a session's calls their workspace: the PersistentVolumeClaim
// of a requester's session in the scope that declares it, created on the session's first
// call (Claims), the credentials its Pods must redact recorded on it, and its deletion
// once the session has been idle for its retention (Reconciler).
package workspace

import (
	"crypto/sha256"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// Options are the operator-wide settings of session workspaces.
type Options struct {
	// StorageClass is the storage class of the claims of scopes whose workspace names none
	// (--workspace-storage-class, the chart's workspace.storageClassName); empty: the
	// cluster's default StorageClass.
	StorageClass string
}

// Access is what the tool asks for: "" when it mounts no workspace.
func Access(spec *v1alpha1.ToolSpec) v1alpha1.WorkspaceAccess {
	if spec == nil {
		return ""
	}
	return spec.Sandbox.Workspace
}

// SessionSafe says whether a call of the tool may run beside other calls of its session:
// a ReadWrite workspace tool is always a barrier, a ReadOnly one never is (it only reads
// what the barriers before it left), any other tool is what its concurrencySafe says.
func SessionSafe(spec *v1alpha1.ToolSpec) bool {
	switch Access(spec) {
	case v1alpha1.WorkspaceReadWrite:
		return false
	case v1alpha1.WorkspaceReadOnly:
		return true
	}
	return spec != nil && spec.ConcurrencySafe
}

// ClaimName is the deterministic name of the claim of a requester's session in
// the scope that declared the workspace: the scope (cut) for people and a hash of scope,
// requester and session, so two sessions, one session name in two scopes, or one session
// name chosen by two requesters (an agent guessing another's session) never share a claim.
func ClaimName(scope, requester, session string) string {
	readable := scope
	if len(readable) > 30 {
		readable = readable[:30]
	}
	return "toolgate-ws-" + trimDash(readable) + "-" + shortHash(scope+"\x00"+requester+"\x00"+session, 16)
}

// shortHash is the first n hex digits of s's SHA-256 (as podspec's, for claim names).
func shortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

func trimDash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '-' {
		s = s[:len(s)-1]
	}
	return s
}

// SessionLabelValue is the value of podcontract.LabelWorkspaceSession: the
// session when it is a label value, else a hash of it (AnnotationWorkspaceSession has it exactly).
func SessionLabelValue(session string) string {
	if len(validation.IsValidLabelValue(session)) == 0 {
		return session
	}
	return "h" + shortHash(session, 40)
}
