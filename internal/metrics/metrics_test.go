package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPhaseCollectorReportsEveryPhase(t *testing.T) {
	c := &phaseCollector{
		count: func(context.Context) (map[string]int, error) {
			return map[string]int{"Running": 3, "AwaitingApproval": 1}, nil
		},
		desc: prometheus.NewDesc("toolgate_toolcalls_active", "help", []string{"phase"}, nil),
	}
	want := `# HELP toolgate_toolcalls_active help
# TYPE toolgate_toolcalls_active gauge
toolgate_toolcalls_active{phase="AwaitingApproval"} 1
toolgate_toolcalls_active{phase="Running"} 3
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

func TestPhaseCollectorReportsErrors(t *testing.T) {
	c := &phaseCollector{
		count: func(context.Context) (map[string]int, error) { return nil, errors.New("cache not synced") },
		desc:  prometheus.NewDesc("toolgate_toolcalls_active", "help", []string{"phase"}, nil),
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "cache not synced") {
		t.Fatalf("gather error = %v, want the counter's error", err)
	}
}

func TestOutcomeLabelsAreBounded(t *testing.T) {
	Outcomes.Reset()
	Outcomes.WithLabelValues("echo", "Succeeded", "Succeeded").Inc()
	Outcomes.WithLabelValues("echo", "Succeeded", "Succeeded").Inc()
	if got := testutil.ToFloat64(Outcomes.WithLabelValues("echo", "Succeeded", "Succeeded")); got != 2 {
		t.Fatalf("counter = %v", got)
	}
	if n := testutil.CollectAndCount(Outcomes); n != 1 {
		t.Fatalf("series = %d, want one per (tool, phase, reason)", n)
	}
}
