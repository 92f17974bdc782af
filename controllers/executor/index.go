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
// indexed), so that a session's calls are ordered, and its workspace's retention finds them,
// without scanning the namespace. The ToolCall reconciler sets it up.
const IndexSession = "spec.session"

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
