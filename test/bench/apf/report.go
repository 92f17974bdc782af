package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

type report struct {
	Options   string        `json:"options"`
	Rendering string        `json:"rendering"`
	Operator  string        `json:"operator"`
	Agents    string        `json:"agents"`
	LoadStart string        `json:"loadStart"`
	Phases    []phaseResult `json:"phases"`
	// Summary: per phase name, the median over rounds of each figure.
	Summary []phaseResult `json:"summary"`
}

// latStats are nearest-rank percentiles in milliseconds.
type latStats struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50Ms"`
	P90 float64 `json:"p90Ms"`
	P99 float64 `json:"p99Ms"`
	Max float64 `json:"maxMs"`
}

func stats(d []time.Duration) latStats {
	if len(d) == 0 {
		return latStats{}
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		i = max(0, min(i, len(s)-1))
		return ms(s[i])
	}
	return latStats{N: len(s), P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type phaseResult struct {
	Round int    `json:"round"`
	Name  string `json:"name"`
	APF   bool   `json:"apf"`
	Flood bool   `json:"flood"`

	OperatorUpdate        latStats     `json:"operatorStatusUpdate"`
	OperatorGet           latStats     `json:"operatorGet"`
	OperatorWritesPerSec  float64      `json:"operatorWritesPerSec"`
	OperatorErrors        int          `json:"operatorErrors"`
	OperatorFirstError    string       `json:"operatorFirstError,omitempty"`
	Operator429           int64        `json:"operator429"`
	OperatorLate          int          `json:"operatorLateCycles"`
	OperatorSchema        string       `json:"operatorSchema"`
	AgentCreatesPerSec    float64      `json:"agentCreatesPerSec"`
	AgentCreate           latStats     `json:"agentCreate"`
	AgentErrors           int          `json:"agentErrors"`
	AgentFirstError       string       `json:"agentFirstError,omitempty"`
	Agents429             int64        `json:"agents429"`
	AgentSchema           string       `json:"agentSchema,omitempty"`
	Levels                []levelDelta `json:"levels"`
	LoadBefore, LoadAfter string       `json:"-"`
	Load                  string       `json:"load"`
}

func (p *phaseResult) fillOperator(s *operatorSamples, window time.Duration, tooMany int64) {
	p.OperatorUpdate, p.OperatorGet = stats(s.update), stats(s.get)
	p.OperatorWritesPerSec = float64(len(s.update)) / window.Seconds()
	p.OperatorErrors, p.OperatorFirstError, p.OperatorLate = s.errors, s.firstErr, s.late
	p.Operator429 = tooMany
	p.Load = p.LoadBefore + " → " + p.LoadAfter
}

func (p *phaseResult) fillFlood(s *floodSamples, window time.Duration) {
	p.AgentCreate = stats(s.latency)
	p.AgentCreatesPerSec = float64(len(s.latency)) / window.Seconds()
	p.AgentErrors, p.AgentFirstError = s.errors, s.firstErr
}

// summarise takes, per phase name, the median over rounds of the headline figures.
func (r *report) summarise() {
	for _, name := range []string{"quiet", "flood", "quiet+apf", "flood+apf"} {
		var ps []phaseResult
		for _, p := range r.Phases {
			if p.Name == name {
				ps = append(ps, p)
			}
		}
		if len(ps) == 0 {
			continue
		}
		med := func(f func(phaseResult) float64) float64 {
			v := make([]float64, len(ps))
			for i, p := range ps {
				v[i] = f(p)
			}
			sort.Float64s(v)
			return v[len(v)/2]
		}
		s := ps[0]
		s.Round = 0
		s.OperatorUpdate = latStats{N: int(med(func(p phaseResult) float64 { return float64(p.OperatorUpdate.N) })),
			P50: med(func(p phaseResult) float64 { return p.OperatorUpdate.P50 }),
			P90: med(func(p phaseResult) float64 { return p.OperatorUpdate.P90 }),
			P99: med(func(p phaseResult) float64 { return p.OperatorUpdate.P99 }),
			Max: med(func(p phaseResult) float64 { return p.OperatorUpdate.Max })}
		s.OperatorGet.P50 = med(func(p phaseResult) float64 { return p.OperatorGet.P50 })
		s.OperatorGet.P99 = med(func(p phaseResult) float64 { return p.OperatorGet.P99 })
		s.OperatorWritesPerSec = med(func(p phaseResult) float64 { return p.OperatorWritesPerSec })
		s.AgentCreatesPerSec = med(func(p phaseResult) float64 { return p.AgentCreatesPerSec })
		s.AgentCreate.P50 = med(func(p phaseResult) float64 { return p.AgentCreate.P50 })
		s.AgentCreate.P99 = med(func(p phaseResult) float64 { return p.AgentCreate.P99 })
		s.Agents429 = int64(med(func(p phaseResult) float64 { return float64(p.Agents429) }))
		s.Operator429 = int64(med(func(p phaseResult) float64 { return float64(p.Operator429) }))
		r.Summary = append(r.Summary, s)
	}
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "bench-apf: %s\nobjects: %s\noperator: %s\nagents: %s\nload average at start: %s\n\n",
		r.Options, r.Rendering, r.Operator, r.Agents, r.LoadStart)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tphase\tstatus update p50\tp90\tp99\tmax ms\tget p50\tp99 ms\twrites/s\top 429\tagent creates/s\tcreate p50\tp99 ms\tagent 429\terrors op/agents\t")
	rows := append(append([]phaseResult(nil), r.Phases...), r.Summary...)
	for _, p := range rows {
		round := fmt.Sprint(p.Round)
		if p.Round == 0 {
			round = "median"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%.0f\t%.1f\t%.1f\t%d\t%d/%d\t\n",
			round, p.Name, p.OperatorUpdate.P50, p.OperatorUpdate.P90, p.OperatorUpdate.P99, p.OperatorUpdate.Max,
			p.OperatorGet.P50, p.OperatorGet.P99, p.OperatorWritesPerSec, p.Operator429,
			p.AgentCreatesPerSec, p.AgentCreate.P50, p.AgentCreate.P99, p.Agents429, p.OperatorErrors, p.AgentErrors)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\nper phase: where the requests went, and the API server's APF figures for the measured window")
	for _, p := range r.Phases {
		fmt.Fprintf(w, "round %d %s (load %s): operator → %s", p.Round, p.Name, p.Load, p.OperatorSchema)
		if p.AgentSchema != "" {
			fmt.Fprintf(w, ", agents → %s", p.AgentSchema)
		}
		fmt.Fprintln(w)
		var parts []string
		for _, l := range p.Levels {
			rejected := fmt.Sprintf("%.0f rejected", l.Rejected)
			if l.ByReason != "" {
				rejected += " (" + l.ByReason + ")"
			}
			parts = append(parts, fmt.Sprintf("%s: %.0f dispatched, %s, mean queue wait %.1f ms, seats %.0f nominal / %.0f current",
				l.Level, l.Dispatched, rejected, l.MeanWaitMS, l.NominalSeats, l.CurrentSeats))
		}
		fmt.Fprintf(w, "    %s\n", strings.Join(parts, "\n    "))
		for _, e := range []string{p.OperatorFirstError, p.AgentFirstError} {
			if e != "" {
				fmt.Fprintf(w, "    first error: %s\n", e)
			}
		}
	}
}

func (o options) describe() string {
	limits := "kube-apiserver default concurrency limits (400 + 200 mutating)"
	if o.maxInflight > 0 || o.maxMutating > 0 {
		limits = fmt.Sprintf("--max-requests-inflight=%d --max-mutating-requests-inflight=%d", o.maxInflight, o.maxMutating)
	}
	return fmt.Sprintf("%d rounds × 4 phases of %s (flood warm-up %s); operator %d goroutines every %s; %s",
		o.rounds, o.duration, o.warmup, o.operatorWorkers, o.operatorInterval, limits)
}
