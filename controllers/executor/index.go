package executor

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/pkg/catalog"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// IndexCallName indexes toolgate's Jobs and Pods by the call they run for (ByCall), so that
// a reconcile or an executor finds a call's children without scanning the namespace.
const IndexCallName = "index.callName"

// IndexSession indexes ToolCalls by spec.session (calls without a session are not
// indexed), so that a session workspace's retention finds its calls without scanning the
// namespace. The ToolCall reconciler sets it up.
const IndexSession = "spec.session"

// IndexSessionKey indexes ToolCalls by SessionKey (calls without a session are not
// indexed): the calls one session's barriers and order span. The ToolCall reconciler sets
// it up.
const IndexSessionKey = "index.sessionKey"

// SessionKey is the session a call belongs to: (scope, spec.session, requester), so that
// two requesters (or two scopes) using one session name never wait on each other. Empty
// for a call without a session. spec.requester is the authenticated user the API server
// stamped at create (the toolgate-requester admission policy), immutable like the whole
// spec, so it is known from the call's first sighting and no agent can pose as another.
// The parts are joined by NUL, which none of them may contain.
func SessionKey(call *v1alpha1.ToolCall) string {
	if call.Spec.Session == "" {
		return ""
	}
	return call.Spec.Scope + "\x00" + call.Spec.Session + "\x00" + call.Spec.Requester
}

// BySessionKey is the IndexSessionKey value of a ToolCall.
func BySessionKey(o client.Object) []string {
	if call, ok := o.(*v1alpha1.ToolCall); ok {
		if key := SessionKey(call); key != "" {
			return []string{key}
		}
	}
	return nil
}

// ByCall is the IndexCallName value of a Job or Pod: the name of the call it runs for.
func ByCall(o client.Object) []string {
	if name := o.GetAnnotations()[podcontract.AnnotationCallName]; name != "" {
		return []string{name}
	}
	return nil
}

// MetricTool is the tool label of a call's metrics: the model-facing name of the
// registration the call resolved to (registered by platform teams, so bounded), or
// metrics.UnknownTool when it did not resolve — never spec.tool as the caller wrote it,
// with which any caller could mint unlimited series.
func MetricTool(call *v1alpha1.ToolCall) string {
	snap := call.Status.Tool
	if snap == nil || snap.Spec == nil {
		return metrics.UnknownTool
	}
	return catalog.ToolName(snap.Spec, snap.Name)
}
