package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	tg "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// operator runs the operator role as a child process of this binary and kills it. Like
// the kubelet restarting a crashed container, it starts a process that exits by itself
// (cmd/manager exits when the API server is away at start-up) again after a second, and
// counts it.
type operator struct {
	exe, kubeconfig string
	args            []string
	logPath         string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	runs    int
	crashes int
	exits   []time.Time // when each process that exited by itself was seen gone
	stopped bool
}

// start starts a new operator process.
func (o *operator) start() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.launch()
}

// launch starts a process (KUBECONFIG in its environment, as cmd/manager reads it through
// ctrl.GetConfig), its output appended to the operator log. o.mu is held.
func (o *operator) launch() error {
	log, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }() // the child holds its own descriptor
	o.runs++
	_, _ = fmt.Fprintf(log, "=== operator process %d starts at %s\n", o.runs, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(o.exe, append([]string{"operator"}, o.args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+o.kubeconfig)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	o.cmd, o.done = cmd, done
	go func() {
		_ = cmd.Wait()
		close(done)
		o.exited(cmd)
	}()
	return nil
}

// exited restarts a process that ended without being killed.
func (o *operator) exited(cmd *exec.Cmd) {
	o.mu.Lock()
	if o.cmd != cmd {
		o.mu.Unlock()
		return // killed on purpose
	}
	o.cmd = nil
	o.crashes++
	o.exits = append(o.exits, time.Now())
	o.mu.Unlock()
	time.Sleep(time.Second)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cmd == nil && !o.stopped {
		if err := o.launch(); err != nil {
			progress("restarting the operator process: " + err.Error())
		}
	}
}

// kill sends SIGKILL to the running operator process and waits until it is gone: nothing
// shuts down cleanly, no deferred function, no graceful shutdown of the manager runs.
func (o *operator) kill() {
	o.mu.Lock()
	cmd, done := o.cmd, o.done
	o.cmd = nil
	o.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// shutdown kills the operator for good.
func (o *operator) shutdown() {
	o.mu.Lock()
	o.stopped = true
	o.mu.Unlock()
	o.kill()
}

// exitTimes are when the processes that exited by themselves were seen gone.
func (o *operator) exitTimes() []time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]time.Time(nil), o.exits...)
}

func (o *operator) figures() (runs, crashes int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.runs, o.crashes
}

// faults kills and restarts the operator (and, when asked, restarts the API server) at
// random intervals until stop is called.
type faults struct {
	op               *operator
	env              *tg.Env
	minGap, maxGap   time.Duration
	apiServerEvery   int
	afterAPIServer   func() error // run after each API server restart (the simulated kubelet's)
	rng              *rand.Rand
	mu               sync.Mutex
	kills, apiServer int
	last             time.Time
	killedAt         []time.Time
	errs             []error
	cancel           context.CancelFunc
	done             chan struct{}
}

func (f *faults) run(ctx context.Context) {
	ctx, f.cancel = context.WithCancel(ctx)
	f.done = make(chan struct{})
	go func() {
		defer close(f.done)
		for n := 1; ; n++ {
			gap := f.minGap + time.Duration(f.rng.Int64N(int64(f.maxGap-f.minGap)+1))
			select {
			case <-ctx.Done():
				return
			case <-time.After(gap):
			}
			f.fault(n)
		}
	}()
}

// fault is one fault: every apiServerEvery-th an API server restart (the operator is
// killed with it), otherwise an operator kill; the operator is started again at once.
func (f *faults) fault(n int) {
	killedAt := time.Now() // before SIGKILL: the process dies after it
	f.op.kill()
	var err error
	apiServer := f.apiServerEvery > 0 && n%f.apiServerEvery == 0
	if apiServer {
		if err = f.env.RestartAPIServer(); err != nil {
			progress("restarting the API server: " + err.Error())
		} else if f.afterAPIServer != nil {
			if err = f.afterAPIServer(); err != nil {
				progress("after the API server restart: " + err.Error())
			}
		}
	}
	at := time.Now()
	if serr := f.op.start(); err == nil {
		err = serr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kills++
	if apiServer {
		f.apiServer++
	}
	f.last = at
	f.killedAt = append(f.killedAt, killedAt)
	if err != nil {
		f.errs = append(f.errs, err)
	}
	progress(fmt.Sprintf("fault %d: operator killed%s and started again", n, map[bool]string{true: ", API server restarted", false: ""}[apiServer]))
}

// stop ends the faults; the operator started by the last one keeps running.
func (f *faults) stop() {
	f.cancel()
	<-f.done
}

// killTimes are when each operator kill was sent.
func (f *faults) killTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.killedAt...)
}

func (f *faults) figures() (kills, apiServer int, last time.Time, errs []error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kills, f.apiServer, f.last, append([]error(nil), f.errs...)
}

func executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(exe)
}
