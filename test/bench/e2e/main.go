// Command e2e measures toolgate's latency on the real local cluster (`make up`) against bare
// Kubernetes baselines, in one run, interleaved (A B C [D] A B C [D] ...):
//
//	A  a ToolCall of the example `echo` Tool (runner in the image, sandbox.scratch None: no
//	   volume), created as user `agent`: create -> terminal phase (result frozen), seen on a
//	   ToolCall watch opened before.
//	B  a bare Job of the same image running /tools/echo directly (no runner): create -> Job
//	   condition Complete=True on a Job watch.
//	C  a bare Pod of the same image and command: create -> a terminated container in the
//	   Pod's status on a Pod watch.
//	D  a ToolCall of an echo Tool WITHOUT runnerInImage (so with the default scratch
//	   emptyDirs): the init container copies the runner from the operator image first.
//	W  a warm ToolCall: the echo Tool copied with spec.warmPool (-pool, default 2), a Ready
//	   pool Pod waited for first (unmeasured): create -> terminal phase (warm.go).
//	G  series A's ToolCall under gVisor: the echo Tool copied with sandbox.runtimeClassName
//	   gvisor (and 256Mi of memory for gVisor's kernel), cold (gvisor.go).
//	E  (diagnostic, -series ABCDE) the bare Pod of C plus the two emptyDir volumes toolgate's
//	   tool Pods mount.
//	S  a ToolCall of the echo Tool copied with sandbox.workspace ReadOnly into a bench scope
//	   that declares a workspace, all samples in one session: its claim exists and is bound
//	   (the first S sample, in the warm-up round, provisions it): the cost of mounting it.
//	P  the same call, each sample in a new session: the session's first call, with its claim's
//	   creation and provisioning (reported apart).
//	N  the same echo copy in the same scope WITHOUT a workspace: S/N and P/N (workspace.go).
//	X  a session call: the echo copy in a scope with sessionSandbox, all samples in one
//	   session (its Pod started in the warm-up round): create -> terminal phase.
//	Y  series X under gVisor (its own session).
//	Z  a bare exec of /tools/echo into a running Pod of the echo spec (session.go).
//	K  series A's call in a scope whose Jobs wait in the Kueue LocalQueue -queue (queue.go).
//	V  series W's warm call in that scope (a warm Pod is not admitted: no Job).
//	Q  a pooled tool's session's first call: the echo copy in X's scope with spec.warmPool
//	   (-pool), each sample a new session that claims a session pool Pod, a Ready one waited
//	   for first (unmeasured); the claimed Pod deleted after (sessionpool.go). Against X.
//
// It prints p50/p95/max of each series and the ratios A/B and A/C; see docs/performance-cluster.md.
//
//	go run ./test/bench/e2e -n 30
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

const (
	ns         = "toolgate-demo"
	scope      = "demo"
	toolImage  = "toolgate.local/tools:dev"
	benchLabel = "toolgate.dev/bench-e2e"
	initTool   = "bench-echo-init"
)

type options struct {
	n, warmup int
	// pool is series W's warm pool size; burst (0: none) the concurrent warm calls per
	// burst round, with the pool resized to burst, for burstRounds rounds.
	pool, burst, burstRounds int
	// concurrent (0: none) is the ReadOnly session calls per round after the series, for
	// concurrentRounds rounds (session.go).
	concurrent, concurrentRounds int
	series                       string
	gap                          time.Duration
	timeout                      time.Duration
	args                         string
	// queue is series K's and V's Kueue LocalQueue.
	queue string
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 30, "samples of each series")
	flag.IntVar(&o.warmup, "warmup", 1, "unmeasured rounds first (image and page caches)")
	flag.StringVar(&o.series, "series", "ABCD", "series to run, interleaved: A ToolCall, B bare Job, C bare Pod, D ToolCall with the runner init container, E bare Pod with toolgate's two emptyDir volumes, G series A under gVisor, W warm ToolCall, K series A through the Kueue LocalQueue -queue, V series W in that scope, S workspace ToolCall (claim bound), P workspace ToolCall of a new session (claim provisioned), N the same Tool without workspace, X session call (its session's Pod running), Y X under gVisor, Z bare exec into a running Pod, Q a pooled tool's session's first call (a session pool Pod claimed)")
	flag.DurationVar(&o.gap, "gap", time.Second, "pause after each sample (after its objects' deletion was requested), plus a random 0-1s jitter so that creates do not phase-lock with the kubelet's 1 s PLEG relist")
	flag.DurationVar(&o.timeout, "timeout", 90*time.Second, "per-sample timeout")
	flag.StringVar(&o.args, "args", `{"message":"hi"}`, "the echo calls' arguments (a non-empty object)")
	flag.IntVar(&o.pool, "pool", 2, "series W and Q: the warm pool's size")
	flag.IntVar(&o.burst, "burst", 0, "after the series: rounds of this many concurrent warm calls, the pool resized to it (0: none)")
	flag.IntVar(&o.burstRounds, "burst-rounds", 3, "rounds of -burst")
	flag.IntVar(&o.concurrent, "concurrent", 0, "after the series: rounds of this many concurrent ReadOnly calls in one session's sandbox Pods (0: none)")
	flag.IntVar(&o.concurrentRounds, "concurrent-rounds", 3, "rounds of -concurrent")
	flag.StringVar(&o.queue, "queue", "toolgate", "series K and V: the Kueue LocalQueue (make up's toolgate)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-e2e:", err)
		var f failed
		if errors.As(err, &f) {
			os.Exit(1)
		}
		os.Exit(2)
	}
}

type failed struct{ n int }

func (f failed) Error() string { return fmt.Sprintf("%d samples failed", f.n) }

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return strings.TrimSpace(string(b))
	}
	return strings.Join(f[:3], " ")
}

func kubeconfig(root, env, rel string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	return filepath.Join(root, ".cluster", rel)
}

func newClient(path string) (client.WithWatch, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s (run make up first): %w", path, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return client.NewWithWatch(cfg, client.Options{Scheme: toolgatetest.NewScheme()})
}
