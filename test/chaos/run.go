package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers"
	tg "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/chaos/check"
)

// result is the harness's report: the run's shape and the checker's report.
type result struct {
	N                int           `json:"n"`
	Seed             uint64        `json:"seed"`
	Rate             float64       `json:"rate"`
	KillEvery        string        `json:"killEvery"`
	Kills            int           `json:"kills"`
	APIServerRestart int           `json:"apiServerRestarts"`
	OperatorRuns     int           `json:"operatorProcesses"`
	OperatorCrashes  int           `json:"operatorExits"`
	Wall             time.Duration `json:"wallNanos"`
	FaultWindow      time.Duration `json:"faultWindowNanos"`
	LoadBefore       string        `json:"loadBefore"`
	LoadAfter        string        `json:"loadAfter"`
	CPUs             int           `json:"cpus"`
	Kueue            kueueFigures  `json:"kueue"`
	Errors           []string      `json:"errors,omitempty"`
	Check            check.Report  `json:"check"`
}

// Print writes the run's shape, then the checker's table.
func (r *result) Print(w io.Writer) {
	_, _ = fmt.Fprintf(w, "chaos: N=%d, seed %d, %.0f calls/s, faults every %s: %d operator kills (SIGKILL), %d API server restarts, %d operator processes (%d exited by themselves)\n",
		r.N, r.Seed, r.Rate, r.KillEvery, r.Kills, r.APIServerRestart, r.OperatorRuns, r.OperatorCrashes)
	_, _ = fmt.Fprintf(w, "wall %s (faults during the first %s); %d CPUs, load average before %s, after %s\n\n",
		r.Wall.Round(100*time.Millisecond), r.FaultWindow.Round(100*time.Millisecond), r.CPUs, r.LoadBefore, r.LoadAfter)
	k := r.Kueue
	_, _ = fmt.Fprintf(w, "simulated Kueue (LocalQueue %s, quota %d): %d Jobs admitted (%d after a hold past the tool's timeout + grace), at most %d running, longest wait %s; %d patches refused (conflict), %d lists failed\n\n",
		k.Queue, k.Quota, k.Admitted, k.LongHeld, k.MaxRunning, k.MaxWait.Round(100*time.Millisecond), k.Conflicts, k.ListErrors)
	r.Check.Print(w)
	for _, e := range r.Errors {
		_, _ = fmt.Fprintln(w, "harness error:", e)
	}
}

func run(o options) (res *result, err error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	rng := rand.New(rand.NewPCG(o.seed, 0x70016a7e))
	res = &result{N: o.n, Seed: o.seed, Rate: o.rate, KillEvery: fmt.Sprintf("%s–%s", o.killMin, o.killMax),
		LoadBefore: loadAverage(), CPUs: runtime.NumCPU()}

	progress("starting envtest")
	env, err := tg.Start(tg.Options{RestartableAPIServer: o.restartAPIServer})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, env.Stop()) }()
	dir, err := os.MkdirTemp("", "toolgate-chaos-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ns, err := env.CreateNamespace(ctx, "chaos")
	if err != nil {
		return nil, err
	}

	k := tg.NewKubelet(nil)
	kubelet := &kubeletRunner{env: env, k: k, workers: o.kubeletWorkers}
	if err := kubelet.start(); err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, kubelet.stop()) }()
	logsURL, stopLogs, err := tg.ServeLogs(k)
	if err != nil {
		return nil, err
	}
	defer func() { _ = stopLogs() }()

	op, err := newOperator(env, dir, logsURL, o)
	if err != nil {
		return nil, err
	}
	progress("starting the operator process")
	if err := op.start(); err != nil {
		return nil, err
	}
	defer op.shutdown()
	if err := setupTools(ctx, env.Client, k, ns.Name, o.approvalWindow); err != nil {
		return nil, err
	}

	// The simulated Kueue runs in this process, through every operator kill, until the
	// history is read.
	kq := &kueue{c: env.Client, ns: ns.Name, queue: servedQueue, quota: kueueQuota, every: 200 * time.Millisecond,
		longest: admissionTimeout + o.deadlineGrace + 3*time.Second}
	kueueCtx, stopKueue := context.WithCancel(ctx)
	defer stopKueue()
	go kq.run(kueueCtx)

	calls := plan(o.n, rng)
	script := expectations(ns.Name, calls)
	approverClient, err := env.AddUser("approver", []string{tg.EditorsGroup})
	if err != nil {
		return nil, err
	}
	agentClient, err := env.AddUser(agentUser, []string{tg.EditorsGroup})
	if err != nil {
		return nil, err
	}
	requesters := map[string]client.Client{tg.AdminUser: env.Client, agentUser: agentClient}
	ap := &approver{c: approverClient, ctx: ctx, script: script, maxDelay: 1500 * time.Millisecond,
		rng: rand.New(rand.NewPCG(o.seed, 1)), answered: map[types.UID]bool{}}
	rec, err := check.NewRecorder(env.Config, ns.Name)
	if err != nil {
		return nil, err
	}
	rec.OnCall = ap.onCall
	recCtx, stopRec := context.WithCancel(ctx)
	defer stopRec()
	if err := rec.Start(recCtx); err != nil {
		return nil, err
	}

	f := &faults{op: op, env: env, minGap: o.killMin, maxGap: o.killMax, rng: rand.New(rand.NewPCG(o.seed, 2))}
	if o.restartAPIServer {
		f.apiServerEvery, f.afterAPIServer = o.apiServerEvery, kubelet.restart
	}
	faultStart := time.Now()
	f.run(ctx)
	progress(fmt.Sprintf("creating %d calls at %.0f/s while the operator is killed every %s–%s", o.n, o.rate, o.killMin, o.killMax))
	if err := createCalls(ctx, requesters, ns.Name, calls, o.rate); err != nil {
		f.stop()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// Not the operator's failure: with -restart-apiserver the API server is away most
			// of the time, and creating the calls alone can outlast the run's bound.
			return nil, fmt.Errorf("the run's -timeout (%s) passed while creating the calls; raise it: %w", o.timeout, err)
		}
		return nil, err
	}
	time.Sleep(o.faultTail) // the faults go on for a while after the last call
	f.stop()
	res.FaultWindow = time.Since(faultStart)
	kills, apiRestarts, last, ferrs := f.figures()
	progress(fmt.Sprintf("faults stopped after %d kills; waiting up to %s for every call to end", kills, o.bound))
	waitTerminal(ctx, env.Client, ns.Name, o.n, last.Add(o.bound))
	time.Sleep(time.Second) // the watch delivers the last versions

	stopKueue()
	stopRec() // the final lists come after the last watched version
	ap.wg.Wait()
	h, herr := rec.History(ctx)
	h.PodStarts = podStarts(k.PodStarts())
	// Kills: every operator process that ended under its calls, killed or by itself.
	h.SessionHandovers, h.Kills = sessionHandovers(k.SessionHandovers()), append(f.killTimes(), op.exitTimes()...)
	h.Expectations, h.LastFault, h.TerminalBound = script, last, o.bound
	res.Check = check.Check(h)
	res.Kills, res.APIServerRestart, res.Kueue = kills, apiRestarts, kq.figures()
	res.OperatorRuns, res.OperatorCrashes = op.figures()
	res.Wall, res.LoadAfter = time.Since(start), loadAverage()
	for _, e := range append(append(append(ferrs, herr), rec.Errors()...), ap.errs...) {
		if e != nil {
			res.Errors = append(res.Errors, e.Error())
		}
	}
	if o.keep != "" {
		if err := copyFile(op.logPath, o.keep); err != nil {
			res.Errors = append(res.Errors, err.Error())
		}
	}
	return res, nil
}

func newOperator(env *tg.Env, dir, logsURL string, o options) (*operator, error) {
	exe, err := executable()
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := tg.WriteKubeconfig(env.Config, kubeconfig); err != nil {
		return nil, err
	}
	args := []string{"-logs", logsURL, "-deadline-grace", o.deadlineGrace.String()}
	if o.verbose {
		args = append(args, "-v")
	}
	return &operator{exe: exe, kubeconfig: kubeconfig, args: args, logPath: filepath.Join(dir, "operator.log")}, nil
}

// kubeletRunner runs the simulated kubelet's manager, and a new one after each API server
// restart. A manager that lives through restarts every ~27 s backs its reflectors off to
// client-go's 30–60 s (reset only after two healthy minutes) and so misses most of the few
// seconds in which the API server answers; the operator, killed at every fault, starts with
// fresh reflectors each time. The fake cluster must not be the bottleneck.
type kubeletRunner struct {
	env      *tg.Env
	k        *tg.Kubelet
	workers  int
	stopping func() error
}

func (r *kubeletRunner) start() error {
	stop, err := startKubelet(r.env, r.k, r.workers)
	if err != nil {
		return err
	}
	r.stopping = stop
	return nil
}

func (r *kubeletRunner) stop() error {
	if r.stopping == nil {
		return nil
	}
	stop := r.stopping
	r.stopping = nil
	return stop()
}

// restart stops the manager and starts a new one (the Kubelet's scripts and counts stay).
func (r *kubeletRunner) restart() error {
	return errors.Join(r.stop(), r.start())
}

// startKubelet runs the simulated kubelet in a manager of its own in this process (as
// Env.StartKubelet does) with workers concurrent reconciles: the fake cluster must not be
// the bottleneck.
func startKubelet(env *tg.Env, k *tg.Kubelet, workers int) (func() error, error) {
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme: env.Scheme, Cache: controllers.CacheOptions(), Metrics: metricsserver.Options{BindAddress: "0"},
		// SkipNameValidation: kubeletRunner.restart registers the same controllers again.
		Controller: config.Controller{MaxConcurrentReconciles: workers, SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	k.Client = mgr.GetClient()
	if err := k.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		return nil, errors.Join(errors.New("the simulated kubelet's cache did not sync"), <-done)
	}
	return func() error { cancel(); return <-done }, nil
}

// createCalls creates the calls in order at rate, each as its requester (the client of
// that user), retried until the API server takes it (an AlreadyExists after a lost answer
// counts as taken).
func createCalls(ctx context.Context, clients map[string]client.Client, ns string, calls []plannedCall, rate float64) error {
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for i, pc := range calls {
		if i > 0 {
			<-tick.C
		}
		for giveUp := time.Now().Add(2 * time.Minute); ; {
			err := clients[pc.requester].Create(ctx, pc.object(ns, i))
			if err == nil || apierrors.IsAlreadyExists(err) {
				break
			}
			// A restarted API server refuses (Forbidden) until its RBAC cache has synced.
			if ctx.Err() != nil || apierrors.IsInvalid(err) || time.Now().After(giveUp) {
				return fmt.Errorf("creating %s: %w", pc.name, err)
			}
			time.Sleep(check.Retry)
		}
	}
	return nil
}

// waitTerminal polls until n calls are terminal or the deadline passes.
func waitTerminal(ctx context.Context, c client.Client, ns string, n int, deadline time.Time) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for ctx.Err() == nil {
		calls := &v1alpha1.ToolCallList{}
		if err := c.List(ctx, calls, client.InNamespace(ns)); err == nil {
			done := 0
			for i := range calls.Items {
				if calls.Items[i].Status.Phase.IsTerminal() {
					done++
				}
			}
			if done == n {
				progress("every call is terminal")
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	progress("the bound passed with calls not terminal")
}

func podStarts(in []tg.PodStart) []check.PodStart {
	out := make([]check.PodStart, 0, len(in))
	for _, p := range in {
		out = append(out, check.PodStart{Namespace: p.Namespace, Pod: p.Pod, Job: p.Job, JobUID: p.JobUID,
			Call: p.Call, CallUID: p.CallUID, Attempt: p.Attempt, At: p.At})
	}
	return out
}

func sessionHandovers(in []tg.SessionHandover) []check.SessionHandover {
	out := make([]check.SessionHandover, 0, len(in))
	for _, h := range in {
		out = append(out, check.SessionHandover{Namespace: h.Namespace, Pod: h.Pod, PodUID: h.PodUID, CallUID: h.CallUID,
			Attempt: h.Attempt, At: h.At, Refused: h.Refused})
	}
	return out
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o600)
}
