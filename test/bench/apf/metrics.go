package main

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// levelCounters are kube-apiserver's apiserver_flowcontrol_* figures of one priority level.
type levelCounters struct {
	Dispatched   float64            `json:"dispatched"` // requests executed
	Rejected     float64            `json:"rejected"`   // not executed: queue-full, time-out (in queue), cancelled (by the client)
	ByReason     map[string]float64 `json:"rejectedByReason,omitempty"`
	WaitSum      float64            `json:"waitSeconds"`  // total time executed requests waited in a queue
	WaitCount    float64            `json:"waitCount"`    // executed requests the wait histogram counted
	NominalSeats float64            `json:"nominalSeats"` // gauge: seats from its shares
	CurrentSeats float64            `json:"currentSeats"` // gauge: seats after lending and borrowing
}

// scrapeAPF reads /metrics of kube-apiserver (as the admin, whom APF exempts) and sums the
// flowcontrol series per priority level.
func scrapeAPF(ctx context.Context, cs *kubernetes.Clientset) (map[string]levelCounters, error) {
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	out := map[string]levelCounters{}
	each := func(family string, f func(level string, m *dto.Metric, c *levelCounters)) {
		mf := families[family]
		if mf == nil {
			return
		}
		for _, m := range mf.GetMetric() {
			level := label(m, "priority_level")
			c := out[level]
			f(level, m, &c)
			out[level] = c
		}
	}
	each("apiserver_flowcontrol_dispatched_requests_total", func(_ string, m *dto.Metric, c *levelCounters) {
		c.Dispatched += m.GetCounter().GetValue()
	})
	each("apiserver_flowcontrol_rejected_requests_total", func(_ string, m *dto.Metric, c *levelCounters) {
		c.Rejected += m.GetCounter().GetValue()
		if c.ByReason == nil {
			c.ByReason = map[string]float64{}
		}
		c.ByReason[label(m, "reason")] += m.GetCounter().GetValue()
	})
	each("apiserver_flowcontrol_request_wait_duration_seconds", func(_ string, m *dto.Metric, c *levelCounters) {
		if label(m, "execute") == "true" {
			c.WaitSum += m.GetHistogram().GetSampleSum()
			c.WaitCount += float64(m.GetHistogram().GetSampleCount())
		}
	})
	each("apiserver_flowcontrol_nominal_limit_seats", func(_ string, m *dto.Metric, c *levelCounters) {
		c.NominalSeats = m.GetGauge().GetValue()
	})
	each("apiserver_flowcontrol_current_limit_seats", func(_ string, m *dto.Metric, c *levelCounters) {
		c.CurrentSeats = m.GetGauge().GetValue()
	})
	return out, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// levelDelta is what one phase added to a level's counters, and its seats at the end.
type levelDelta struct {
	Level        string  `json:"level"`
	Dispatched   float64 `json:"dispatched"`
	Rejected     float64 `json:"rejected"`
	ByReason     string  `json:"rejectedByReason,omitempty"`
	MeanWaitMS   float64 `json:"meanWaitMs"`
	NominalSeats float64 `json:"nominalSeats"`
	CurrentSeats float64 `json:"currentSeats"`
}

// deltas lists the levels that dispatched or rejected anything between two scrapes.
func deltas(before, after map[string]levelCounters) []levelDelta {
	var out []levelDelta
	for level, a := range after {
		b := before[level]
		d := levelDelta{Level: level, Dispatched: a.Dispatched - b.Dispatched, Rejected: a.Rejected - b.Rejected,
			NominalSeats: a.NominalSeats, CurrentSeats: a.CurrentSeats}
		var reasons []string
		for reason, n := range a.ByReason {
			if n -= b.ByReason[reason]; n > 0 {
				reasons = append(reasons, fmt.Sprintf("%s %.0f", reason, n))
			}
		}
		sort.Strings(reasons)
		d.ByReason = strings.Join(reasons, ", ")
		if n := a.WaitCount - b.WaitCount; n > 0 {
			d.MeanWaitMS = (a.WaitSum - b.WaitSum) / n * 1000
		}
		if level != "" && (d.Dispatched > 0 || d.Rejected > 0) {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dispatched > out[j].Dispatched })
	return out
}
