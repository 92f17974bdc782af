// Command chaos sends N ToolCalls through toolgate's reconcilers while the operator is
// killed with SIGKILL and started again at random intervals (and, with -restart-apiserver,
// while the API server is restarted too), then checks the whole history with
// test/chaos/check and exits non-zero on any violation.
//
// The API server is envtest's; the simulated kubelet (pkg/toolgatetest) runs in this
// process, so it survives the kills, and records every Pod start. The operator runs as a
// separate process: this binary re-executed in its "operator" role, which builds the
// manager as cmd/manager does and calls controllers.Setup.
//
//	go run ./test/chaos -n 1000 [-kill-min 1s -kill-max 3s] [-restart-apiserver] [-json]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

type options struct {
	n                int
	rate             float64
	killMin, killMax time.Duration
	faultTail, bound time.Duration
	approvalWindow   time.Duration
	deadlineGrace    time.Duration
	restartAPIServer bool
	apiServerEvery   int
	seed             uint64
	timeout          time.Duration
	jsonOut, verbose bool
	keep             string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "operator" {
		if err := runOperator(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "operator:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.IntVar(&o.n, "n", 1000, "number of ToolCalls")
	flag.Float64Var(&o.rate, "rate", 10, "calls created per second")
	flag.DurationVar(&o.killMin, "kill-min", time.Second, "shortest time between two faults")
	flag.DurationVar(&o.killMax, "kill-max", 3*time.Second, "longest time between two faults")
	flag.DurationVar(&o.faultTail, "fault-tail", 5*time.Second, "faults go on this long after the last call was created")
	flag.DurationVar(&o.bound, "bound", 2*time.Minute, "every call must be terminal this long after the last fault")
	flag.DurationVar(&o.approvalWindow, "approval-window", 5*time.Second, "approval window of the calls nobody answers")
	flag.DurationVar(&o.deadlineGrace, "deadline-grace", 5*time.Second, "the operator's --deadline-grace (the hang scenario ends at timeout + grace)")
	flag.BoolVar(&o.restartAPIServer, "restart-apiserver", false, "restart the API server too (every -apiserver-every-th fault)")
	flag.IntVar(&o.apiServerEvery, "apiserver-every", 3, "with -restart-apiserver, every how many faults the API server restarts")
	flag.Uint64Var(&o.seed, "seed", 0, "random seed (0: from the clock; the report prints it)")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "global timeout")
	flag.BoolVar(&o.jsonOut, "json", false, "print the report as JSON")
	flag.BoolVar(&o.verbose, "v", false, "log the harness's controllers (kubelet) at info level")
	flag.StringVar(&o.keep, "operator-log", "", "write the operator processes' logs here (default: a temporary file, removed)")
	flag.Parse()
	level := zapcore.ErrorLevel
	if o.verbose {
		level = zapcore.InfoLevel
	}
	ctrl.SetLogger(zap.New(zap.Level(level), zap.WriteTo(os.Stderr)))
	if o.n < 1 || o.rate <= 0 || o.killMin <= 0 || o.killMax < o.killMin {
		fmt.Fprintln(os.Stderr, "-n, -rate and -kill-min must be positive and -kill-max ≥ -kill-min")
		os.Exit(2)
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	res, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if o.jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	} else {
		res.Print(os.Stdout)
	}
	if !res.Check.OK() || len(res.Errors) > 0 {
		os.Exit(1)
	}
}

func progress(msg string) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), msg)
}
