// Command controller benchmarks toolgate's ToolCall pipeline end to end: N ToolCalls against
// envtest (kube-apiserver + etcd) with the operator's reconcilers and the simulated Kubelet
// running in this process. It reports throughput, latencies, the operator's API writes per
// call and the process's memory, and exits non-zero if any call did not succeed.
//
//	go run ./test/bench/controller -n 1000 [-concurrency 16] [-json]
//	go run ./test/bench/controller -n 10000 -keep -result-bytes 16384 -operator-process   # memory
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
	"strings"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/bench/internal/proccpu"
)

type options struct {
	n, concurrency, kubeletWorkers int
	operatorWorkers                int
	rate                           float64
	timeout, settle                time.Duration
	outputSchema, cpuProfile       string
	apiProfile                     string
	apiProfileSeconds              int
	json, verbose                  bool

	keep, operatorProcess bool
	noTransform           bool
	ttl                   time.Duration
	resultBytes, prefill  int
	role, kubeconfig      string
	logsURL               string
	qps                   float64
	burst                 int
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
	flag.StringVar(&o.apiProfile, "apiserver-cpuprofile", "", "write a CPU profile of kube-apiserver, taken from the start of the creates for -apiserver-profile-seconds")
	flag.IntVar(&o.apiProfileSeconds, "apiserver-profile-seconds", 30, "length of the kube-apiserver CPU profile")
	flag.IntVar(&warmPoolSize, "warm", 0, "give the echo Tool a warm pool of this size (spec.warmPool; the simulated Kubelet plays pool Pods)")
	flag.BoolVar(&o.json, "json", false, "print the report as JSON")
	flag.BoolVar(&o.verbose, "v", false, "log the reconcilers at info level (default: errors only)")
	flag.BoolVar(&o.keep, "keep", false, "retention-free: the operator keeps every finished call (--toolcall-ttl=0, no history limit)")
	flag.DurationVar(&o.ttl, "ttl", 0, "the operator's --toolcall-ttl (0: its default, 24h; ignored with -keep)")
	flag.IntVar(&o.resultBytes, "result-bytes", 0, "each call's result is a JSON object of this many bytes (0: the echo of its arguments); over 4 KiB it travels in the Pod log")
	flag.BoolVar(&o.operatorProcess, "operator-process", false, "run the operator as a separate process (this binary, -role operator) and report its memory alone")
	flag.IntVar(&o.prefill, "prefill", 0, "after the run, write this many finished copies of a finished call straight through the API and measure the operator watching them, then after a restart")
	flag.BoolVar(&o.noTransform, "no-cache-transform", false, "what-if: the operator's cache without its transforms (managedFields, trimmed terminal calls)")
	flag.StringVar(&o.role, "role", "", "internal: \"operator\" runs only the operator (for -operator-process)")
	flag.StringVar(&o.kubeconfig, "operator-kubeconfig", "", "internal: the operator process's kubeconfig")
	flag.StringVar(&o.logsURL, "logs-url", "", "internal: where the operator process reads simulated Pod logs")
	flag.Float64Var(&o.qps, "qps", 0, "internal: the operator process's client QPS")
	flag.IntVar(&o.burst, "burst", 0, "internal: the operator process's client burst")
	flag.Parse()
	level := zapcore.ErrorLevel
	if o.verbose {
		level = zapcore.InfoLevel
	}
	ctrl.SetLogger(zap.New(zap.Level(level), zap.WriteTo(os.Stderr)))
	if o.role == "operator" {
		if err := runOperatorChild(o.kubeconfig, o.logsURL, o.qps, o.burst, callOptions(o), o.operatorWorkers, cacheOptions(o)); err != nil {
			fmt.Fprintln(os.Stderr, "operator process:", err)
			os.Exit(2)
		}
		return
	}
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
	var envOpts toolgatetest.Options
	if o.apiProfile != "" {
		envOpts.APIServerFlags = map[string]string{"profiling": "true"}
	}
	env, err := toolgatetest.Start(envOpts)
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
	ops, err := startAll(env, operator, cluster, o)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, ops.stop()) }()
	if o.resultBytes > 0 {
		ops.kubelet.Script("echo", toolgatetest.Outcome{Stdout: resultOf(o.resultBytes)})
	}
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

	etcdURL := env.Env.ControlPlane.Etcd.URL.String()
	var storage Storage
	storage.EtcdDBBefore, storage.EtcdInUseBefore, _ = etcdDB(ctx, etcdURL)
	baseOp, baseCluster, baseHarness := ops.operatorCounts(operator), cluster.Snapshot(), harness.Snapshot()
	baseREST, baseReconciles := ops.registryCounts()
	loadBefore := loadAverage()
	cpuBefore := proccpu.Read()
	stopProfile, err := startProfile(o.cpuProfile)
	if err != nil {
		return nil, err
	}
	waitAPIProfile, err := startAPIServerProfile(ctx, env.Config, o.apiProfile, o.apiProfileSeconds)
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
	cpu := proccpu.Read().Sub(cpuBefore)
	waitAPIProfile()
	time.Sleep(o.settle)

	opDelta := ops.operatorCounts(operator).Sub(baseOp)
	clusterDelta := cluster.Snapshot().Sub(baseCluster)
	harnessDelta := harness.Snapshot().Sub(baseHarness)
	rest, reconciles := ops.registryCounts()
	calls, watchErrs := rec.Calls()
	rep = &Report{
		Machine: machine(), LoadBefore: loadBefore, LoadAfter: loadAverage(), Calls: o.n, Concurrency: o.concurrency, Rate: o.rate,
		OperatorWorkers: operatorWorkers(o.operatorWorkers), KubeletWorkers: o.kubeletWorkers, CreateSeconds: createSeconds,
		OperatorRequests: opDelta.Lines(func(Request) bool { return true }),
		ClusterRequests:  clusterDelta.Lines(func(Request) bool { return true }),
		CountedRequests:  opDelta.Requests + clusterDelta.Requests + harnessDelta.Requests,
		ClientGoRequests: rest - baseREST,
		Memory:           readMemory(),
		Keep:             o.keep,
		OperatorProcess:  o.operatorProcess,
		CPUSeconds:       map[string]float64{},
	}
	for name, d := range cpu {
		rep.CPUSeconds[name] = d.Seconds()
	}
	if o.operatorProcess {
		m := ops.operatorMemory()
		rep.OperatorMemory = &m
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
	storage.EtcdDBAfter, storage.EtcdInUseAfter, storage.EtcdKeysAfter = etcdDB(ctx, etcdURL)
	storage.ResultBytesPerCal = o.resultBytes
	names := make([]string, 0, len(calls))
	for name := range calls {
		names = append(names, name)
	}
	sort.Strings(names)
	if storage.ObjectBytes, err = objectSizes(ctx, env.Config, ns.Name, names, 50); err != nil {
		progress("measuring object sizes: " + err.Error())
	}
	rep.Storage = storage
	if o.prefill > 0 {
		var perr error
		if rep.Prefill, perr = runPrefill(ctx, hc, ops, etcdURL, ns.Name, o, calls); perr != nil {
			rep.Failures = append(rep.Failures, Failure{Call: "(prefill)", Reason: "PrefillFailed", Message: perr.Error()})
		}
	}
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

// resultOf is a JSON object of exactly n bytes (at least 12): {"text":"xxx…"}.
func resultOf(n int) []byte {
	const frame = len(`{"text":""}`)
	return []byte(`{"text":"` + strings.Repeat("x", max(1, n-frame)) + `"}`)
}

// cacheOptions are the operator's cache settings for this run.
func cacheOptions(o options) cache.Options {
	c := controllers.CacheOptions()
	if o.noTransform {
		c.DefaultTransform = nil
		for obj, by := range c.ByObject {
			by.Transform = nil
			c.ByObject[obj] = by
		}
	}
	return c
}

// callOptions are the operator's pipeline settings for this run.
func callOptions(o options) controllers.CallOptions {
	c := controllers.DefaultCallOptions()
	if o.operatorWorkers > 0 {
		c.Workers = o.operatorWorkers // the ToolCall controller's own setting wins over the manager's
	}
	switch {
	case o.keep:
		c.Retention = controllers.RetentionOptions{}
	case o.ttl > 0:
		c.Retention.TTL = o.ttl
	}
	return c
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
