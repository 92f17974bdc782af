package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Session sandboxes (controllers/executor/sessionexec).
var (
	// SessionPods counts session Pod events by namespace and event: started (a session's
	// first call of a tool), claimed (the same, in a Pod claimed from the tool's warm pool), replaced (deleted after a call found it misbehaving, or because
	// it may not serve: another CA, relabelled, another spec), reaped (idle past its
	// timeout, its workspace gone, ended) and capped (a call ran cold: a cap was reached).
	SessionPods = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "session_pods_total",
		Help: "Session sandbox Pod events, by namespace and event (started, claimed, replaced, reaped, capped).",
	}, []string{"namespace", "event"})

	// SessionPodsRunning is how many session Pods exist at the reaper's last pass.
	SessionPodsRunning = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "session_pods",
		Help: "Session sandbox Pods at the reaper's last pass.",
	})
)

func registerSession() {
	metrics.Registry.MustRegister(SessionPods, SessionPodsRunning)
}
