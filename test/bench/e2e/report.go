package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

type stats struct {
	n             int
	p50, p95, max time.Duration
}

func pct(ds []time.Duration, p float64) time.Duration {
	// nearest rank
	i := int(p*float64(len(ds))+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(ds) {
		i = len(ds) - 1
	}
	return ds[i]
}

func summarize(ds []time.Duration) stats {
	if len(ds) == 0 {
		return stats{}
	}
	ds = append([]time.Duration(nil), ds...)
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return stats{n: len(ds), p50: pct(ds, 0.50), p95: pct(ds, 0.95), max: ds[len(ds)-1]}
}

func sec(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

func report(res map[string][]sample, series []string, loadBefore, loadAfter string, elapsed time.Duration) {
	names := map[string]string{
		"A": "ToolCall echo (runner in image, scratch None): -> terminal phase",
		"B": "bare Job /tools/echo: create -> Job Complete",
		"C": "bare Pod /tools/echo: create -> container terminated",
		"D": "ToolCall echo (init container): create -> terminal phase",
		"E": "bare Pod + toolgate's 2 emptyDirs: -> terminated",
		"W": "ToolCall echo, warm pool: create -> terminal phase",
		"G": "ToolCall echo under gVisor (RuntimeClass gvisor): -> terminal",
		"K": "ToolCall echo through Kueue LocalQueue: -> terminal phase",
		"V": "ToolCall echo, warm pool, scope with a queue: -> terminal",
		"X": "session call, the session's Pod running: -> terminal",
		"Q": "a pooled tool's session's first call (claim): -> terminal",
	}
	st := map[string]stats{}
	fmt.Printf("\n%-3s %-58s %5s %8s %8s %8s\n", "", "series", "ok", "p50", "p95", "max")
	for _, s := range series {
		var ds []time.Duration
		for _, sm := range res[s] {
			if sm.err == nil {
				ds = append(ds, sm.d)
			}
		}
		st[s] = summarize(ds)
		fmt.Printf("%-3s %-58s %2d/%-2d %8s %8s %8s\n", s, names[s], st[s].n, len(res[s]), sec(st[s].p50), sec(st[s].p95), sec(st[s].max))
	}
	// Breakdowns (from create).
	fmt.Println("\nbreakdown, p50 from create:")
	for _, s := range series {
		keys := map[string][]time.Duration{}
		for _, sm := range res[s] {
			if sm.err != nil {
				continue
			}
			for k, d := range sm.parts {
				keys[k] = append(keys[k], d)
			}
		}
		var parts []string
		for _, k := range []string{"job", "pod", "pod-term", "job-complete"} {
			if ds := keys[k]; len(ds) > 0 {
				x := summarize(ds)
				parts = append(parts, fmt.Sprintf("%s %s (p95 %s)", k, sec(x.p50), sec(x.p95)))
			}
		}
		if len(parts) > 0 {
			fmt.Printf("  %s: %s; end %s\n", s, strings.Join(parts, ", "), sec(st[s].p50))
		}
	}
	ratio := func(a, b time.Duration) string {
		if b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2fx", float64(a)/float64(b))
	}
	a, bb, c := st["A"], st["B"], st["C"]
	fmt.Printf("\nA/B: p50 %s, p95 %s\n", ratio(a.p50, bb.p50), ratio(a.p95, bb.p95))
	fmt.Printf("A/C: p50 %s, p95 %s\n", ratio(a.p50, c.p50), ratio(a.p95, c.p95))
	if d, ok := st["D"]; ok && d.n > 0 {
		fmt.Printf("D-A (init container cost): p50 %+.3fs, p95 %+.3fs; D/C p50 %s\n",
			(d.p50 - a.p50).Seconds(), (d.p95 - a.p95).Seconds(), ratio(d.p50, c.p50))
	}
	if c.n > 0 && a.n > 0 {
		p50ok := float64(a.p50) <= 1.10*float64(c.p50)
		p95ok := float64(a.p95) <= 1.20*float64(c.p95)
		fmt.Printf("target (A p50 <= 1.1x C p50; A p95 <= 1.2x C p95): p50 %s, p95 %s\n", verdict(p50ok), verdict(p95ok))
	}
	fmt.Printf("\nload average (1/5/15 min): before %s, after %s; %s elapsed\n", loadBefore, loadAfter, elapsed.Round(time.Second))
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
