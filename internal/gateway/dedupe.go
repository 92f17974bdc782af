package gateway

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/agentclient"
)

// LabelArgumentsDigest on a call the gateway made is the first 40 hex digits of the sha256
// of its canonical arguments, as the gateway computed them: an index to find a retry by,
// never trusted (a caller may set any label on its own calls). What decides is the
// operator's status.argumentsDigest.
const LabelArgumentsDigest = "toolgate.dev/arguments-digest"

// digestLabelLen is how many hex digits of the digest the label keeps (a label value has
// at most 63 characters; 160 bits are plenty for an index).
const digestLabelLen = 40

// argumentsDigest is the "sha256:<hex>" digest the operator will record for args, or ""
// when they cannot be frozen (the operator will refuse the call).
func argumentsDigest(args []byte) string {
	f, err := pipeline.Freeze(args, pipeline.FreezeOptions{})
	if err != nil {
		return ""
	}
	return f.Digest()
}

// digestLabels are the labels that find a call with digest again.
func digestLabels(digest string) map[string]string {
	hex := strings.TrimPrefix(digest, "sha256:")
	if digest == "" || len(hex) < digestLabelLen {
		return nil
	}
	return map[string]string{LabelArgumentsDigest: hex[:digestLabelLen]}
}

// callKey is what makes a tools/call a retry of another: the same tool, arguments,
// scope, session and requester.
type callKey struct {
	tool, scope, session, digest string
}

// findRetry returns the caller's call of key that is parked for approval, or approved and
// not yet finished, if there is one: a retry of it gets that call instead of a new one that
// would need a second approval. It lists as the caller (RBAC applies) with the digest
// label, so it costs one small LIST, and checks every field of the key on what the API
// server returned, the operator's status.argumentsDigest included. Errors find nothing: a
// new call is made, as without a retry.
func findRetry(ctx context.Context, c *agentclient.Client, key callKey) *v1alpha1.ToolCall {
	labels := digestLabels(key.digest)
	if labels == nil {
		return nil
	}
	labels[agentclient.LabelCreatedBy] = CreatedBy
	list := &v1alpha1.ToolCallList{}
	// From the API server's watch cache as it is (resourceVersion 0): a consistent LIST
	// waits for that cache to catch up with etcd, up to 100 ms on every tools/call. A call
	// the caller was told is parked is in the cache already (the gateway saw it parked on a
	// watch the cache serves); with several API servers another's cache may lag by
	// milliseconds, and a miss costs a new call (a second approval), never a wrong result.
	if err := c.C.List(ctx, list, client.InNamespace(c.Namespace), client.MatchingLabels(labels),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
		return nil
	}
	var found *v1alpha1.ToolCall
	for i := range list.Items {
		call := &list.Items[i]
		if isRetryOf(call, c.Identity, key) && (found == nil || call.CreationTimestamp.Before(&found.CreationTimestamp)) {
			found = call
		}
	}
	return found
}

// isRetryOf reports whether call is requester's call of key, parked or approved and
// running (not cancelled).
func isRetryOf(call *v1alpha1.ToolCall, requester string, key callKey) bool {
	s := call.Spec
	if s.Requester != requester || s.Tool != key.tool || s.Scope != key.scope || s.Session != key.session ||
		call.Status.ArgumentsDigest != key.digest || s.Cancel || agentclient.Done(call) {
		return false
	}
	return agentclient.AwaitingApproval(call) || call.Status.Approver != ""
}
