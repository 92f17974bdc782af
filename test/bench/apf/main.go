// Command apf measures what toolgate's API Priority and Fairness objects (the chart's
// apiPriorityAndFairness: FlowSchemas and PriorityLevelConfigurations toolgate-operator and
// toolgate-agents) do for the operator while agents flood the API server with ToolCall
// creates. On envtest (kube-apiserver + etcd) it runs, per round, four phases:
//
//	quiet      the operator's identity alone: a steady stream of get + status update
//	flood      the same while N agent identities create ToolCalls as fast as they can
//	quiet+apf  as quiet, with the chart's objects applied
//	flood+apf  as flood, with the chart's objects applied
//
// and reports the operator's status-write latency (p50/p90/p99/max), the agents' create
// rate, 429s, and the API server's apiserver_flowcontrol_* figures per priority level.
//
//	go run ./test/bench/apf [-rounds 2] [-duration 20s] [-agents 16] [-max-requests-inflight 40]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

type options struct {
	rounds                   int
	duration, warmup, settle time.Duration
	agents, agentWorkers     int
	agentKind                string
	operatorWorkers          int
	operatorInterval         time.Duration
	maxInflight, maxMutating int
	helm, apfSet             string
	json                     bool
	timeout                  time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.rounds, "rounds", 2, "rounds of the four phases (odd rounds without APF first, even rounds with it first)")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "measured time of each phase")
	flag.DurationVar(&o.warmup, "warmup", 3*time.Second, "time the flood runs before a phase is measured")
	flag.DurationVar(&o.settle, "settle", 3*time.Second, "quiet time between phases")
	flag.IntVar(&o.agents, "agents", 16, "agent identities flooding (each its own client certificate and connection)")
	flag.IntVar(&o.agentWorkers, "agent-workers", 8, "goroutines per agent creating ToolCalls back to back (client rate limit off)")
	flag.StringVar(&o.agentKind, "agent-kind", "serviceaccount", "what the agents are: serviceaccount (system:serviceaccount:agents:agent-N, as in-cluster agents are; without APF objects they share workload-low with the operator) or user (global-default without them)")
	flag.IntVar(&o.operatorWorkers, "operator-workers", 4, "goroutines of the operator's identity, each writing the status of its own ToolCall (the operator's --toolcall-workers default)")
	flag.DurationVar(&o.operatorInterval, "operator-interval", 100*time.Millisecond, "each operator goroutine starts a get + status update this often (or at once when the last took longer)")
	flag.IntVar(&o.maxInflight, "max-requests-inflight", 0, "kube-apiserver --max-requests-inflight (0: its default, 400)")
	flag.IntVar(&o.maxMutating, "max-mutating-requests-inflight", 0, "kube-apiserver --max-mutating-requests-inflight (0: its default, 200)")
	flag.StringVar(&o.helm, "helm", "bin/helm", "helm binary rendering charts/toolgate's templates/flowcontrol.yaml (relative: to the module root); empty: the embedded config/flowcontrol")
	flag.StringVar(&o.apfSet, "set", "", "more helm --set values for the rendering, e.g. apiPriorityAndFairness.agents.nominalConcurrencyShares=5")
	flag.BoolVar(&o.json, "json", false, "print the report as JSON")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "global timeout")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseDevMode(false), zap.Level(zapcore.ErrorLevel)))
	// client-go logs every request the end of a phase cancels; the harness counts errors.
	klog.SetLogger(logr.Discard())

	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	rep, err := run(ctx, o)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-apf:", err)
		os.Exit(2)
	}
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
		return
	}
	rep.print(os.Stdout)
}
