package controllers

import (
	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// metricTool is the tool label of a call's metrics: the model-facing name of the
// registration the call resolved to (registered by platform teams, so bounded), or
// metrics.UnknownTool when it did not resolve — never spec.tool as the caller wrote it,
// with which any caller could mint unlimited series.
func metricTool(call *v1alpha1.ToolCall) string {
	snap := call.Status.Tool
	if snap == nil || snap.Spec == nil {
		return metrics.UnknownTool
	}
	return catalog.ToolName(snap.Spec, snap.Name)
}

// countTerminal counts a call whose terminal status was just written. writeStatus calls it,
// so every terminal call is counted once, however it ended: admission refusal, approval
// refusal or timeout, outcome, internal error.
func countTerminal(call *v1alpha1.ToolCall) {
	tool, phase := metricTool(call), string(call.Status.Phase)
	reason := ""
	if call.Status.Result != nil {
		reason = call.Status.Result.Reason
	}
	metrics.Outcomes.WithLabelValues(tool, phase, reason).Inc()
	if call.Status.CompletionTime != nil {
		metrics.CallLatency.WithLabelValues(tool, phase).
			Observe(call.Status.CompletionTime.Sub(call.CreationTimestamp.Time).Seconds())
	}
}
