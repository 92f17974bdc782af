// Package metrics holds every Prometheus metric toolgate exports, registered into
// controller-runtime's registry (served on the manager's metrics endpoint).
//
// Labels are bounded: a tool's model-facing name as resolved from its registration (registered
// by platform teams; UnknownTool when a call names no registered tool), a pipeline stage, a
// verdict, a phase and a reason from the API's fixed reason set — never a call's name nor a
// tool name as a caller wrote it.
package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

const namespace = "toolgate"

// UnknownTool is the tool label of a call that did not resolve to a registered tool.
const UnknownTool = "unknown"

var (
	// StageDuration is the time one pipeline stage (or stage group) took in the operator:
	// admit (the pure stages in one pass), job_create, outcome (outcome read to frozen result).
	StageDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "stage_duration_seconds",
		Help:      "Time spent in one pipeline stage of a tool call, by stage.",
		Buckets:   []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5},
	}, []string{"stage"})

	// CallLatency is creation-to-terminal time of a call, by tool and phase.
	CallLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "toolcall_duration_seconds",
		Help:      "Time from a ToolCall's creation to its frozen result, by tool and terminal phase.",
		Buckets:   []float64{0.5, 1, 2, 3, 5, 10, 30, 60, 300, 1800},
	}, []string{"tool", "phase"})

	// Verdicts counts the verdicts of the admission stages.
	Verdicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "verdicts_total",
		Help:      "Admission verdicts (Allow, Ask, Deny) by tool and reason.",
	}, []string{"tool", "verdict", "reason"})

	// Outcomes counts calls that reached a terminal phase, every one of them: refused at
	// admission, refused or timed out at approval, or ended after running.
	Outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "toolcalls_total",
		Help:      "ToolCalls that reached a terminal phase, by tool, phase and result reason.",
	}, []string{"tool", "phase", "reason"})

	// Deleted counts the finished calls the operator deleted, by why: ttl (their
	// ttlSecondsAfterFinished passed) or history (over a namespace's history limit).
	Deleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "toolcalls_deleted_total",
		Help:      "Finished ToolCalls the operator deleted, by why (ttl, history).",
	}, []string{"why"})

	// JobsCreated counts the Jobs the operator created (one per attempt).
	JobsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "jobs_created_total",
		Help:      "Jobs created for tool call attempts, by tool.",
	}, []string{"tool"})
)

// PhaseCounter returns, on every scrape, how many calls are in each non-terminal phase.
// It is read from the informer cache, so gauges never drift from the objects.
type PhaseCounter func(ctx context.Context) (map[string]int, error)

type phaseCollector struct {
	count PhaseCounter
	desc  *prometheus.Desc
}

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	counts, err := c.count(context.Background())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for phase, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), phase)
	}
}

// Register adds toolgate's metrics to controller-runtime's registry. The phase gauge
// (toolgate_toolcalls_active{phase}: Running is the active Jobs, AwaitingApproval the approvals
// waiting) is registered only when a counter is given.
func Register(count PhaseCounter) {
	metrics.Registry.MustRegister(StageDuration, CallLatency, Verdicts, Outcomes, Deleted, JobsCreated)
	metrics.Registry.MustRegister(approvalCollectors()...)
	registerWarm()
	registerSession()
	registerWarmRun()
	if count != nil {
		metrics.Registry.MustRegister(&phaseCollector{count: count, desc: prometheus.NewDesc(
			namespace+"_toolcalls_active",
			"ToolCalls in a non-terminal phase (Running: active Jobs; AwaitingApproval: approvals waiting).",
			[]string{"phase"}, nil)})
	}
}
