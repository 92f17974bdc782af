package toolcall

import (
	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/internal/metrics"
)

// countTerminal counts a call whose terminal status was just written. writeStatus calls it,
// so every terminal call is counted once, however it ended: admission refusal, approval
// refusal or timeout, outcome, internal error.
func countTerminal(call *v1alpha1.ToolCall) {
	tool, phase := executor.MetricTool(call), string(call.Status.Phase)
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
