package warmexec

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/toolgate/toolgate/internal/metrics"
)

// sampleCount is how many observations a histogram of WarmStage holds for stage.
func sampleCount(t *testing.T, stage string) uint64 {
	t.Helper()
	h, ok := metrics.WarmStage.WithLabelValues(stage).(prometheus.Histogram)
	if !ok {
		t.Fatalf("WarmStage{%s} is not a histogram", stage)
	}
	m := &dto.Metric{}
	if err := h.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

func TestRecordWarmRunStages(t *testing.T) {
	t0 := time.Now().Add(-time.Second)
	run := warmRun{Done: true, Result: WarmStream{
		HandedOver: t0.Add(30 * time.Millisecond),
		Timings: StreamTimings{Started: t0, Connected: t0.Add(20 * time.Millisecond),
			FirstOutput: t0.Add(50 * time.Millisecond), Ended: t0.Add(60 * time.Millisecond)},
	}}
	before := map[string]uint64{}
	for _, s := range []string{"connect", "run", "close", "decide"} {
		before[s] = sampleCount(t, s)
	}
	streamed := testutil.ToFloat64(metrics.WarmOutcomeSource.WithLabelValues(sourceStream))
	recordWarmRun(context.Background(), run, sourceStream)
	for s, n := range before {
		if got := sampleCount(t, s); got != n+1 {
			t.Errorf("stage %s: %d observations, want %d", s, got, n+1)
		}
	}
	if got := testutil.ToFloat64(metrics.WarmOutcomeSource.WithLabelValues(sourceStream)); got != streamed+1 {
		t.Errorf("stream outcomes %v, want %v", got, streamed+1)
	}

	// A stream this process did not run (a restart): the source counts, no stage does.
	podBefore := testutil.ToFloat64(metrics.WarmOutcomeSource.WithLabelValues(sourcePod))
	connects := sampleCount(t, "connect")
	recordWarmRun(context.Background(), warmRun{}, sourcePod)
	if got := testutil.ToFloat64(metrics.WarmOutcomeSource.WithLabelValues(sourcePod)); got != podBefore+1 {
		t.Errorf("pod outcomes %v, want %v", got, podBefore+1)
	}
	if got := sampleCount(t, "connect"); got != connects {
		t.Errorf("connect observed %d times after a run without a stream, want %d", got, connects)
	}
}
