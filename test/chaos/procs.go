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

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	tg "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// writeKubeconfig writes cfg (envtest's admin) as a kubeconfig for the operator processes.
func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}

// operator runs the operator role as a child process of this binary and kills it.
type operator struct {
	exe, kubeconfig string
	args            []string
	logPath         string

	mu   sync.Mutex
	cmd  *exec.Cmd
	runs int
}

// start starts a new operator process (KUBECONFIG in its environment, as cmd/manager
// reads it through ctrl.GetConfig); its output goes to the operator log.
func (o *operator) start() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	log, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	o.runs++
	_, _ = fmt.Fprintf(log, "=== operator process %d starts at %s\n", o.runs, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(o.exe, append([]string{"operator"}, o.args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+o.kubeconfig)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return err
	}
	_ = log.Close() // the child holds its own descriptor
	o.cmd = cmd
	return nil
}

// kill sends SIGKILL to the running operator process and reaps it: nothing shuts down
// cleanly, no deferred function, no graceful shutdown of the manager runs.
func (o *operator) kill() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cmd == nil {
		return nil
	}
	err := o.cmd.Process.Signal(syscall.SIGKILL)
	_ = o.cmd.Wait()
	if o.cmd.ProcessState != nil && !o.cmd.ProcessState.Exited() {
		err = nil // killed by the signal, as meant
	}
	exited := o.cmd.ProcessState != nil && o.cmd.ProcessState.Exited()
	code := 0
	if exited {
		code = o.cmd.ProcessState.ExitCode()
	}
	o.cmd = nil
	if exited {
		return fmt.Errorf("the operator process had exited by itself (code %d) before the kill: see %s", code, o.logPath)
	}
	return err
}

// faults kills and restarts the operator (and, when asked, restarts the API server) at
// random intervals until stop is called.
type faults struct {
	op               *operator
	env              *tg.Env
	minGap, maxGap   time.Duration
	apiServerEvery   int
	rng              *rand.Rand
	mu               sync.Mutex
	kills, apiServer int
	last             time.Time
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
	err := f.op.kill()
	apiServer := f.apiServerEvery > 0 && n%f.apiServerEvery == 0
	if apiServer && err == nil {
		err = f.env.RestartAPIServer()
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
