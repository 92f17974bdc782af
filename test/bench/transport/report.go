package main

import (
	"fmt"
	"sort"
	"time"
)

type stats struct {
	n                  int
	p50, p95, p99, max time.Duration
}

func pct(ds []time.Duration, p float64) time.Duration {
	i := int(p*float64(len(ds))+0.999999) - 1 // nearest rank
	i = max(0, min(i, len(ds)-1))
	return ds[i]
}

func summarize(ds []time.Duration) stats {
	if len(ds) == 0 {
		return stats{}
	}
	ds = append([]time.Duration(nil), ds...)
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return stats{n: len(ds), p50: pct(ds, 0.50), p95: pct(ds, 0.95), p99: pct(ds, 0.99), max: ds[len(ds)-1]}
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond))
}

func report(o options, rows map[string]map[string][]sample, loadBefore, loadAfter string, elapsed time.Duration) {
	fmt.Printf("\nround trip (client side, ms), n=%d per series after %d warm-up rounds\n", o.n, o.warmup)
	fmt.Printf("%-8s %-12s %7s %7s %7s %7s %7s %9s %9s %6s\n", "runtime", "series", "ok", "p50", "p95", "p99", "max", "conn p50", "end p50", "stale")
	p50 := map[string]map[string]stats{}
	for _, rt := range o.runtimes {
		p50[rt] = map[string]stats{}
		for _, s := range o.series {
			var ds []time.Duration
			parts := map[string][]time.Duration{}
			stale := 0
			for _, sm := range rows[rt][s.name] {
				if sm.err != nil {
					continue
				}
				ds = append(ds, sm.d)
				stale += sm.stale
				for k, d := range sm.parts {
					parts[k] = append(parts[k], d)
				}
			}
			st := summarize(ds)
			p50[rt][s.name] = st
			fmt.Printf("%-8s %-12s %3d/%-3d %7s %7s %7s %7s %9s %9s %6d\n", rt, s.name, st.n, len(rows[rt][s.name]),
				ms(st.p50), ms(st.p95), ms(st.p99), ms(st.max), ms(summarize(parts["connected"]).p50), ms(summarize(parts["end"]).p50), stale)
		}
	}
	if len(o.runtimes) > 1 {
		base := o.runtimes[0]
		for _, rt := range o.runtimes[1:] {
			fmt.Printf("\n%s/%s ratio (p50, p95):\n", rt, base)
			for _, s := range o.series {
				a, b := p50[rt][s.name], p50[base][s.name]
				if a.n == 0 || b.n == 0 {
					continue
				}
				fmt.Printf("  %-12s %.2fx %.2fx\n", s.name, float64(a.p50)/float64(b.p50), float64(a.p95)/float64(b.p95))
			}
		}
	}
	fmt.Printf("\nload average (1/5/15 min): before %s, after %s; %s elapsed\n", loadBefore, loadAfter, elapsed.Round(time.Second))
}
