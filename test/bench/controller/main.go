// Command controller benchmarks toolgate's ToolCall pipeline end to end: N ToolCalls against
// envtest (kube-apiserver + etcd) with the operator's reconcilers and the simulated Kubelet
// running in this process. It reports throughput, latencies, the operator's API writes per
// call and the process's memory, and exits non-zero if any call did not succeed.
//
//	go run ./test/bench/controller -n 1000 [-concurrency 16] [-json]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

type options struct {
	n, concurrency, kubeletWorkers int
	operatorWorkers                int
	rate                           float64
	timeout, settle                time.Duration
	outputSchema, cpuProfile       string
	json, verbose                  bool
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 1000, "number of ToolCalls")
	flag.IntVar(&o.concurrency, "concurrency", 16, "goroutines creating ToolCalls")
	flag.IntVar(&o.kubeletWorkers, "kubelet-workers", 4, "concurrent reconciles of the simulated Kubelet (the fake cluster, not the operator)")
	flag.IntVar(&o.operatorWorkers, "operator-workers", 0, "what-if: MaxConcurrentReconciles of the operator's controllers (0: as shipped, the ToolCall controller's --toolcall-workers default)")
	flag.Float64Var(&o.rate, "rate", 0, "create calls at this rate (calls/s) instead of as fast as possible")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "global timeout (setup, calls and report)")
	flag.DurationVar(&o.settle, "settle", 2*time.Second, "quiet time before the write counters are read (asynchronous events)")
	flag.StringVar(&o.outputSchema, "output-schema", "", "the echo Tool's output schema (JSON); empty: none")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (operator, Kubelet, harness) during the calls")
	flag.BoolVar(&o.json, "json", false, "print the report as JSON")
	flag.BoolVar(&o.verbose, "v", false, "log the reconcilers at info level (default: errors only)")
	flag.Parse()
	level := zapcore.ErrorLevel
	if o.verbose {
		level = zapcore.InfoLevel
	}
	ctrl.SetLogger(zap.New(zap.Level(level), zap.WriteTo(os.Stderr)))
	if o.n < 1 || o.concurrency < 1 {
		fmt.Fprintln(os.Stderr, "-n and -concurrency must be at least 1")
		os.Exit(2)
	}

	rep, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmark:", err)
		os.Exit(2)
	}
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		rep.Print(os.Stdout)
	}
	if len(rep.Failures) > 0 || rep.Succeeded != o.n {
		os.Exit(1)
	}
}

func run(o options) (rep *Report, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	progress("starting envtest")
	env, err := toolgatetest.Start(toolgatetest.Options{})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, env.Stop()) }()

	operator, cluster, harness := NewCounter(), NewCounter(), NewCounter()
	hc, err := client.NewWithWatch(counted(env.Config, harness), client.Options{Scheme: env.Scheme})
	if err != nil {
		return nil, err
	}
	ns, err := env.CreateNamespace(ctx, "bench")
	if err != nil {
		return nil, err
	}
	progress("starting the operator and the simulated Kubelet")
	op, kl, err := startManagers(env, operator, cluster, o.operatorWorkers, o.kubeletWorkers)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, op.stop(), kl.stop()) }()
	if err := createTool(ctx, hc, ns.Name, o.outputSchema); err != nil {
		return nil, err
	}
	rec := NewRecorder(o.n)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if err := rec.Start(watchCtx, hc, ns.Name); err != nil {
		return nil, err
	}
	time.Sleep(o.settle) // let the Tool's registration events flush before the baseline

	baseOp, baseCluster, baseHarness := operator.Snapshot(), cluster.Snapshot(), harness.Snapshot()
	baseREST, baseReconciles := registryCounts()
	loadBefore := loadAverage()
	stopProfile, err := startProfile(o.cpuProfile)
	if err != nil {
		return nil, err
	}
	progress(fmt.Sprintf("creating %d ToolCalls with %d goroutines", o.n, o.concurrency))
	createStart := time.Now()
	createCalls(ctx, hc, ns.Name, o, rec)
	createSeconds := time.Since(createStart).Seconds()
	select {
	case <-rec.Done():
		progress("every call is terminal")
	case <-ctx.Done():
		progress("timed out waiting for the calls")
	}
	stopProfile()
	time.Sleep(o.settle)

	opDelta := operator.Snapshot().Sub(baseOp)
	clusterDelta := cluster.Snapshot().Sub(baseCluster)
	harnessDelta := harness.Snapshot().Sub(baseHarness)
	rest, reconciles := registryCounts()
	calls, watchErrs := rec.Calls()
	rep = &Report{
		Machine: machine(), LoadBefore: loadBefore, LoadAfter: loadAverage(), Calls: o.n, Concurrency: o.concurrency, Rate: o.rate,
		OperatorWorkers: operatorWorkers(o.operatorWorkers), KubeletWorkers: o.kubeletWorkers, CreateSeconds: createSeconds,
		OperatorRequests: opDelta.Lines(func(Request) bool { return true }),
		ClusterRequests:  clusterDelta.Lines(func(Request) bool { return true }),
		CountedRequests:  opDelta.Requests + clusterDelta.Requests + harnessDelta.Requests,
		ClientGoRequests: rest - baseREST,
		Memory:           readMemory(),
	}
	for k, v := range reconciles {
		if d := v - baseReconciles[k]; d != 0 {
			rep.Reconciles = append(rep.Reconciles, KindCount{Kind: k, Count: d})
		}
	}
	sort.Slice(rep.Reconciles, func(i, j int) bool { return rep.Reconciles[i].Kind < rep.Reconciles[j].Kind })
	for _, e := range watchErrs {
		rep.WatchErrors = append(rep.WatchErrors, e.Error())
	}
	rep.fill(calls, opDelta)
	evCtx, evCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer evCancel()
	rep.addEvidence(evCtx, hc, ns.Name, calls)
	progress("stopping")
	return rep, nil
}

// createCalls creates o.n echo calls from o.concurrency goroutines, recording each one's
// client-side creation time just before its Create.
func createCalls(ctx context.Context, c client.Client, ns string, o options, rec *Recorder) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range o.concurrency {
		wg.Go(func() {
			for i := range next {
				name := fmt.Sprintf("call-%05d", i)
				call := toolgatetest.MakeToolCall(name, ns).Args(map[string]any{"text": fmt.Sprintf("hello %d", i)}).Obj()
				at := time.Now()
				rec.Created(name, at, nil)
				if err := c.Create(ctx, call); err != nil {
					rec.Created(name, at, err)
				}
			}
		})
	}
	var tick <-chan time.Time
	if o.rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / o.rate))
		defer t.Stop()
		tick = t.C
	}
	for i := range o.n {
		if tick != nil && i > 0 {
			<-tick
		}
		next <- i
	}
	close(next)
	wg.Wait()
}

// startProfile starts a CPU profile into path (none when empty); the result stops it.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

func progress(msg string) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), msg)
}

// operatorWorkers is the ToolCall controller's worker count the run used: the flag's
// what-if value, or the shipped default.
func operatorWorkers(flagValue int) int {
	if flagValue > 0 {
		return flagValue
	}
	return controllers.DefaultCallOptions().Workers
}
