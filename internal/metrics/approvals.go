package metrics

import "github.com/prometheus/client_golang/prometheus"

// The approval notification metrics (internal/notify). Labels: event (Requested, Approved,
// Denied, Expired), origin (default: the operator's sink; scope: a ToolScope's), outcome.
var (
	// ApprovalNotifications counts deliveries that ended: delivered (a 2xx answer), failed
	// (attempts exhausted or a permanent refusal) or dropped (the queue was full).
	ApprovalNotifications = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "approval_notifications_total",
		Help:      "Approval CloudEvents whose delivery to a sink ended, by event, sink origin and outcome (delivered, failed, dropped).",
	}, []string{"event", "origin", "outcome"})

	// ApprovalNotificationRetries counts failed attempts that were retried.
	ApprovalNotificationRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "approval_notification_retries_total",
		Help:      "Failed approval CloudEvent deliveries that were scheduled again with backoff, by event and sink origin.",
	}, []string{"event", "origin"})

	// ApprovalNotificationAttempt is the duration of one HTTP attempt, by result (ok, error).
	ApprovalNotificationAttempt = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "approval_notification_attempt_duration_seconds",
		Help:      "Time of one approval CloudEvent POST to a sink, by result (ok, error).",
		Buckets:   []float64{0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"result"})

	// ApprovalNotificationLatency is the time from queueing the event (right after the status
	// write that recorded the transition) to the sink's 2xx, retries included.
	ApprovalNotificationLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "approval_notification_delivery_seconds",
		Help:      "Time from queueing an approval CloudEvent (after the status write recording the transition) to its delivery, retries included, by sink origin.",
		Buckets:   []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300},
	}, []string{"origin"})
)

func approvalCollectors() []prometheus.Collector {
	return []prometheus.Collector{ApprovalNotifications, ApprovalNotificationRetries, ApprovalNotificationAttempt, ApprovalNotificationLatency}
}
