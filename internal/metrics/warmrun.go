package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// A warm attempt's way through pods/attach (controllers/warmpool_attach.go), by stage:
// connect (the attach request until the stream takes stdin), run (the Handover written until
// the runner's first stdout byte: verification and the body), close (that byte until the
// stream ended: the container's exit as containerd and the kubelet report it through the
// stream), decide (the stream's end until the outcome was written into the call's status).
var (
	WarmStage = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "warm_attempt_stage_seconds",
		Help:    "Time a warm attempt spent in each stage: isolate (the NetworkPolicy check before the handover), connect, run, close, decide.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"stage"})

	// WarmOutcomeSource counts warm attempts by where their outcome was read: stream (the
	// verified result line on the attach stream) or pod (the kubelet's account in the Pod's
	// status: a killed body, a pointer frame, a restarted operator, a stream that failed).
	WarmOutcomeSource = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "warm_attempt_outcomes_total",
		Help: "Warm attempts by where their outcome was read (stream or pod).",
	}, []string{"source"})
)

func registerWarmRun() {
	metrics.Registry.MustRegister(WarmStage, WarmOutcomeSource)
}
