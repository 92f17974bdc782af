package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Warm pools (controllers/warmpool*.go). Labels: the pool's namespace (a Tool's own; for a
// ClusterTool, each of its spec.warmPool.namespaces), the kind of tool that keeps it (Tool
// or ClusterTool: a ClusterTool and a Tool of one name in one namespace are two pools) and
// the model-facing name (tools with a pool are few: each holds idle Pods).
var (
	// WarmPoolSize is the pool size a Tool asks for (spec.warmPool.size).
	WarmPoolSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "warmpool_size",
		Help: "Idle Pods a Tool's warm pool should hold (spec.warmPool.size), by namespace, kind and tool.",
	}, []string{"namespace", "kind", "tool"})

	// WarmPoolReady is how many of a pool's Pods are Ready and unclaimed.
	WarmPoolReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "warmpool_ready_pods",
		Help: "Ready, unclaimed Pods in a Tool's warm pool at its last pass, by namespace, kind and tool.",
	}, []string{"namespace", "kind", "tool"})

	// WarmClaims counts attempts that ran in a claimed pool Pod.
	WarmClaims = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "warmpool_claims_total",
		Help: "Call attempts that claimed a warm pool Pod, by namespace, kind and tool.",
	}, []string{"namespace", "kind", "tool"})

	// WarmMisses counts attempts of a pooled Tool that ran cold, by why: empty (no Ready Pod
	// of the call's template), conflict (every candidate was claimed first), error (the pool
	// could not be read or the claim was refused), unlisted (a ClusterTool's call in a
	// namespace its spec.warmPool.namespaces does not list), workspace (the tool mounts a
	// session workspace, which a started pool Pod cannot).
	WarmMisses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "warmpool_misses_total",
		Help: "Call attempts of a Tool with a warm pool that ran cold, by namespace, kind, tool and why (empty, conflict, error, unlisted).",
	}, []string{"namespace", "kind", "tool", "why"})

	// WarmPodsRejected counts pool Pods deleted because their live spec is not the spec of
	// the pool their labels and owner put them in (someone moved another tool's Pod into
	// it), by where the operator saw it: pool (the pool's pass) or claim (a call's claim).
	WarmPodsRejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "warmpool_rejected_pods_total",
		Help: "Pool Pods deleted because their live spec is not their pool's, by namespace, kind, tool and where (pool, claim).",
	}, []string{"namespace", "kind", "tool", "where"})

	// WarmRefill is the time from a pool Pod's creation to its Ready condition.
	WarmRefill = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "warmpool_refill_seconds",
		Help:    "Time from a warm pool Pod's creation to Ready, by namespace, kind and tool.",
		Buckets: []float64{0.25, 0.5, 1, 2, 3, 5, 10, 30, 60},
	}, []string{"namespace", "kind", "tool"})
)

func registerWarm() {
	metrics.Registry.MustRegister(WarmPoolSize, WarmPoolReady, WarmClaims, WarmMisses, WarmPodsRejected, WarmRefill)
}
