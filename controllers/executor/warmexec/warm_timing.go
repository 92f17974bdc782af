package warmexec

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/internal/metrics"
)

// Where a warm attempt's outcome was read (WarmOutcomeSource's label).
const (
	sourceStream = "stream"
	sourcePod    = "pod"
)

// recordWarmRun reports how a finished warm attempt spent its time on the attach stream
// (metrics and one log line): the figures that say what sets the warm path's latency.
func recordWarmRun(ctx context.Context, run warmRun, source string) {
	metrics.WarmOutcomeSource.WithLabelValues(source).Inc()
	t := run.Result.Timings
	if !run.Done || t.Started.IsZero() {
		return // no stream in this process (a restart), or an executor that does not measure
	}
	decided := time.Now()
	stages := []struct {
		name     string
		from, to time.Time
	}{
		{"connect", t.Started, t.Connected},
		{"run", run.Result.HandedOver, t.FirstOutput},
		{"close", t.FirstOutput, t.Ended},
		{"decide", t.Ended, decided},
	}
	kv := []any{"source", source}
	for _, s := range stages {
		if s.from.IsZero() || s.to.IsZero() {
			continue
		}
		d := s.to.Sub(s.from)
		metrics.WarmStage.WithLabelValues(s.name).Observe(d.Seconds())
		kv = append(kv, s.name+"Ms", d.Milliseconds())
	}
	ctrl.LoggerFrom(ctx).Info("warm attempt timings", kv...)
}

// observeIsolation records how long the isolation check before a handover took.
func observeIsolation(since time.Time) {
	metrics.WarmStage.WithLabelValues("isolate").Observe(time.Since(since).Seconds())
}
