package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// The operator as a process of its own (-operator-process): the parent starts this binary
// again with -role operator; the child runs the operator's reconcilers (exactly as
// startManagers does) against the parent's envtest, reads the simulated Pods' logs from the
// parent over HTTP (the simulated Kubelet lives in the parent), and answers one command
// per line on stdin with one JSON line on stdout: "report" (its request counts, client-go
// counters, reconciles and memory). EOF on stdin stops it. Its memory is then the
// operator's alone.

// childReport is what the operator process reports.
type childReport struct {
	Counts     []wireCount    `json:"counts"`
	ByPhase    map[string]int `json:"byPhase"`
	PerCall    map[string]int `json:"perCall"`
	REST       int            `json:"rest"`
	Reconciles map[string]int `json:"reconciles"`
	Memory     Memory         `json:"memory"`
}

type wireCount struct {
	Request Request       `json:"request"`
	N       int           `json:"n"`
	Spent   time.Duration `json:"spent"`
}

func toWire(c Counts) ([]wireCount, map[string]int, map[string]int) {
	out := make([]wireCount, 0, len(c.ByKind))
	for k, n := range c.ByKind {
		out = append(out, wireCount{Request: k, N: n, Spent: c.Spent[k]})
	}
	return out, c.ByPhase, c.PerCall
}

func (r childReport) counts() Counts {
	c := Counts{ByKind: map[Request]int{}, Spent: map[Request]time.Duration{}, PerCall: r.PerCall, ByPhase: r.ByPhase}
	for _, w := range r.Counts {
		c.ByKind[w.Request], c.Spent[w.Request] = w.N, w.Spent
		c.Requests += w.N
	}
	if c.PerCall == nil {
		c.PerCall = map[string]int{}
	}
	if c.ByPhase == nil {
		c.ByPhase = map[string]int{}
	}
	return c
}

// runOperatorChild is main for -role operator.
func runOperatorChild(kubeconfig, logsURL string, qps float64, burst int, call controllers.CallOptions, workers int, cacheOpts cache.Options) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(qps), burst
	counter := NewCounter()
	mgr, err := ctrl.NewManager(counted(cfg, counter), ctrl.Options{
		Scheme:     toolgatetest.NewScheme(),
		Cache:      cacheOpts,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: workers},
	})
	if err != nil {
		return err
	}
	if err := controllers.Setup(mgr, controllers.Options{Call: call, Logs: toolgatetest.LogsClient{Base: logsURL}}); err != nil {
		return err
	}
	op, err := startWithin(mgr, 15*time.Minute)
	if err != nil {
		return err
	}
	out := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	if err := out.Encode(childReport{}); err != nil { // ready
		return errors.Join(err, op.stop())
	}
	for in.Scan() {
		if path := os.Getenv("BENCH_OPERATOR_HEAP_PROFILE"); path != "" {
			writeHeapProfile(path)
		}
		rest, reconciles := registryCounts()
		rep := childReport{REST: rest, Reconciles: reconciles, Memory: readMemory()}
		rep.Counts, rep.ByPhase, rep.PerCall = toWire(counter.Snapshot())
		if err := out.Encode(rep); err != nil {
			return errors.Join(err, op.stop())
		}
	}
	return op.stop()
}

// operatorProcess is the parent's handle on the child.
type operatorProcess struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	out      *json.Decoder
	stopLogs func() error
	done     bool
}

// startOperatorProcess writes a kubeconfig for cfg, serves the Kubelet's logs and starts
// this binary as the operator; it returns once the child's cache has synced.
func startOperatorProcess(cfg *rest.Config, kubelet *toolgatetest.Kubelet, dir string, o options) (*operatorProcess, error) {
	kubeconfig := dir + "/operator.kubeconfig"
	if err := toolgatetest.WriteKubeconfig(cfg, kubeconfig); err != nil {
		return nil, err
	}
	logsURL, stopLogs, err := toolgatetest.ServeLogs(kubelet)
	if err != nil {
		return nil, err
	}
	args := []string{"-role", "operator", "-operator-kubeconfig", kubeconfig, "-logs-url", logsURL,
		"-operator-workers", strconv.Itoa(o.operatorWorkers), "-ttl", o.ttl.String(),
		"-qps", strconv.FormatFloat(o.qps, 'g', -1, 64), "-burst", strconv.Itoa(o.burst)}
	if o.keep {
		args = append(args, "-keep")
	}
	if o.noTransform {
		args = append(args, "-no-cache-transform")
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, errors.Join(err, stopLogs())
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, errors.Join(err, stopLogs())
	}
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(err, stopLogs())
	}
	p := &operatorProcess{cmd: cmd, stdin: stdin, out: json.NewDecoder(stdout), stopLogs: stopLogs}
	var ready childReport
	if err := p.out.Decode(&ready); err != nil {
		return nil, errors.Join(fmt.Errorf("the operator process did not start: %w", err), p.stop())
	}
	return p, nil
}

func (p *operatorProcess) report() (childReport, error) {
	var rep childReport
	if _, err := io.WriteString(p.stdin, "report\n"); err != nil {
		return rep, err
	}
	return rep, p.out.Decode(&rep)
}

func (p *operatorProcess) pid() int { return p.cmd.Process.Pid }

func (p *operatorProcess) stop() error {
	if p == nil || p.done {
		return nil
	}
	p.done = true
	_ = p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		err = errors.Join(errors.New("the operator process did not stop; killed"), p.cmd.Process.Kill())
	}
	return errors.Join(err, p.stopLogs())
}

// writeHeapProfile writes the operator process's heap profile (after a GC) to path, for
// BENCH_OPERATOR_HEAP_PROFILE: where its memory goes.
func writeHeapProfile(path string) {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return
	}
	_ = pprof.WriteHeapProfile(f)
	_ = f.Close()
}
