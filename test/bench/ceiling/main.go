// Command ceiling measures what this machine's envtest kube-apiserver and etcd sustain for
// raw writes, without the operator: ToolCall creates (through toolgate's CRD schema and
// identity admission policy), then ToolCall status updates (each an update of a call with
// its last resourceVersion, adding nothing but a condition's new message), from C
// goroutines for a fixed time each. It prints writes/s, latencies, and the CPU the API
// server, etcd and this process used: the ceiling bench-controller's throughput is read
// against (docs/performance.md).
//
//	go run ./test/bench/ceiling [-duration 10s] [-concurrency 8,32]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/bench/internal/proccpu"
)

func main() {
	duration := flag.Duration("duration", 10*time.Second, "how long each phase writes")
	concurrency := flag.String("concurrency", "8,32", "comma-separated goroutine counts, one run of both phases each")
	flag.Parse()
	if err := run(*duration, *concurrency); err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(2)
	}
}

func run(duration time.Duration, concurrency string) error {
	env, err := toolgatetest.Start(toolgatetest.Options{})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	cfg := *env.Config
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit: the server's ceiling
	c, err := client.New(&cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return err
	}
	ctx := context.Background()
	fmt.Printf("%-8s %-12s %8s %9s %8s %8s   %s\n", "workers", "phase", "writes", "writes/s", "p50 ms", "p99 ms", "CPU s (load before)")
	for _, field := range strings.Split(concurrency, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			return fmt.Errorf("bad -concurrency %q", field)
		}
		ns, err := env.CreateNamespace(ctx, "ceiling")
		if err != nil {
			return err
		}
		calls := make([][]*v1alpha1.ToolCall, n)
		phase(n, duration, "create", func(g, i int) error {
			call := toolgatetest.MakeToolCall(fmt.Sprintf("c-%d-%d", g, i), ns.Name).
				Args(map[string]any{"text": "ceiling"}).Obj()
			if err := c.Create(ctx, call); err != nil {
				return err
			}
			calls[g] = append(calls[g], call)
			return nil
		})
		phase(n, duration, "status", func(g, i int) error {
			call := calls[g][i%len(calls[g])]
			meta.SetStatusCondition(&call.Status.Conditions, metav1.Condition{Type: "Bench", Status: metav1.ConditionTrue,
				Reason: "Bench", Message: strconv.Itoa(i)})
			return c.Status().Update(ctx, call)
		})
	}
	return nil
}

// phase runs write(g, i) from n goroutines for d and prints the figures.
func phase(n int, d time.Duration, name string, write func(g, i int) error) {
	load := loadAverage()
	cpu0 := proccpu.Read()
	var failed atomic.Int64
	lat := make([][]time.Duration, n)
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				t := time.Now()
				if err := write(g, i); err != nil {
					failed.Add(1)
					continue
				}
				lat[g] = append(lat[g], time.Since(t))
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	cpu := proccpu.Read().Sub(cpu0)
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	fmt.Printf("%-8d %-12s %8d %9.0f %8.1f %8.1f   apiserver %.1f, etcd %.1f, this %.1f of %.1f s wall (load %s); %d failed\n",
		n, name, len(all), float64(len(all))/wall.Seconds(), pct(0.5), pct(0.99),
		cpu["kube-apiserver"].Seconds(), cpu["etcd"].Seconds(), cpu["self"].Seconds(), wall.Seconds(), load, failed.Load())
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}
