package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// errArgumentsAltered is the digest check's failure as the model reads it.
var errArgumentsAltered = errors.New("the arguments that reached the tool differ from the frozen arguments, so the tool was not run")

// execute verifies the arguments, runs the tool (alone) or has the body side run it (the
// signer: ln is where it listens) and returns the frame to deliver. Its ExitCode is the
// runner's exit code.
func execute(cfg config, ln net.Listener, sigs <-chan os.Signal, stderr io.Writer) frame.Frame {
	// The frame names the arguments the runner was asked to serve (the call's digest): the
	// operator believes no frame for other arguments.
	f := frame.Frame{ArgsDigest: cfg.argsDigest}
	if refused, ok := preflight(cfg, f, stderr); !ok {
		if ln != nil {
			refuseBody(ln, sigs, stderr)
		}
		return refused
	}
	if err := protectKey(); err != nil {
		return failed(f, frame.ReasonStartError, frame.ExitStartError, fmt.Errorf("protecting the frame key: %w", err))
	}
	if ln != nil {
		return redactError(runRemote(cfg, f, ln, sigs, stderr), cfg.credentials)
	}
	if err := writeArgsFile(cfg.argsFile, cfg.args); err != nil {
		return failed(f, frame.ReasonArgumentsFileError, frame.ExitRunnerError, err)
	}
	return redactError(runTool(cfg, f, sigs, stderr), cfg.credentials)
}

// preflight is what the key holder checks before any body runs: the credentials can be
// redacted and the arguments are the frozen ones.
func preflight(cfg config, f frame.Frame, stderr io.Writer) (frame.Frame, bool) {
	if cfg.handoverErr != nil {
		reason := frame.ReasonInvalidConfiguration
		if errors.Is(cfg.handoverErr, errHandoverRefused) {
			reason = frame.ReasonHandoverRefused
		}
		return failed(frame.Frame{}, reason, frame.ExitRunnerError, cfg.handoverErr), false
	}
	if err := checkCredentials(cfg.credentials); err != nil {
		// The error names the credentials (variables, files), never their values.
		return failed(f, frame.ReasonCredentialTooShort, frame.ExitRunnerError, err), false
	}
	// The one hash of the arguments outside the operator, and a real check: the bytes
	// crossed the API server, admission plugins and the kubelet (env expansion) to get
	// here, or an attach stream (a warm Pod, whose Handover signature covers the digest,
	// never the bytes). Whatever altered them on the way, the body does not run on bytes
	// other than the ones the frame will name.
	if got := frame.DigestOf(cfg.args); got != cfg.argsDigest {
		// The digests are for the Pod log (operators); the frame's error reaches the model.
		logf(stderr, "%s is %q but the arguments hash to %q", podcontract.EnvArgsDigest, cfg.argsDigest, got)
		return failed(f, frame.ReasonArgumentsDigestMismatch, frame.ExitRunnerError, errArgumentsAltered), false
	}
	return f, true
}

func failed(f frame.Frame, reason string, code int, err error) frame.Frame {
	f.Reason, f.ExitCode, f.Error = reason, code, err.Error()
	if len(f.Error) > maxErrorLen {
		f.Error = strings.ToValidUTF8(f.Error[:maxErrorLen], "")
	}
	return f
}

func writeArgsFile(path string, args []byte) error {
	if path == podcontract.NoArgsFile {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, args, 0o644)
}

// bodyArgsFile is $TOOLGATE_ARGS_FILE as the body sees it: empty when no file was written.
func bodyArgsFile(path string) string {
	if path == podcontract.NoArgsFile {
		return ""
	}
	return path
}

// runTool starts the tool with its arguments on stdin, forwards SIGTERM and
// SIGINT to it, captures its stdout, copies its stderr to stderr keeping a
// tail, and reports how it ended. Both are redacted of the credentials' forms before
// anything is kept, counted or copied.
func runTool(cfg config, f frame.Frame, sigs <-chan os.Signal, stderr io.Writer) frame.Frame {
	c := newCapture(cfg, stderr)
	f, started := runProcess(cfg, f, sigs, c.outW, c.errsW)
	if !started {
		return f
	}
	return c.fill(f)
}

// runProcess runs the tool with the arguments on its stdin, its stdout and stderr copied
// to out and errs (closed, when they are closers, at the end of each stream), SIGTERM and
// SIGINT forwarded, and says how it ended. started is false when it never ran.
func runProcess(cfg config, f frame.Frame, sigs <-chan os.Signal, out, errs io.Writer) (frame.Frame, bool) {
	cmd := exec.Command(cfg.command[0], cfg.command[1:]...)
	cmd.Env = append(bodyEnviron(os.Environ()), podcontract.EnvArgsFile+"="+bodyArgsFile(cfg.argsFile))
	if cfg.traceparent != "" {
		cmd.Env = append(cmd.Env, podcontract.EnvTraceparent+"="+cfg.traceparent)
	}
	// A session call's own variables: the environment is otherwise the container's, fresh
	// for every call (the runner never changes its own).
	cmd.Env = append(cmd.Env, cfg.callEnv...)
	trust, err := egressTrust(os.Environ(), cfg.egressCABundle)
	if err != nil {
		return failed(f, frame.ReasonStartError, frame.ExitStartError, err), false
	}
	cmd.Env = append(cmd.Env, trust...)
	pipes, err := newStdio(cmd)
	if err != nil {
		return failed(f, frame.ReasonStartError, frame.ExitStartError, err), false
	}
	// A session call, and any call with a deadline, runs in a process group of its own: the
	// deadline and the signals reach everything the tool started.
	grouped := cfg.session || cfg.deadline > 0
	if grouped {
		inGroup(cmd)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pipes.closeAll()
		return startFailed(f, err), false
	}
	pipes.run(cfg.args, out, errs)
	done := make(chan struct{})
	forward := func(s os.Signal) { _ = cmd.Process.Signal(s) }
	if pid := cmd.Process.Pid; grouped {
		forward = func(s os.Signal) {
			if sig, ok := s.(syscall.Signal); ok {
				killGroup(pid, sig)
			}
		}
	}
	go forwardSignals(sigs, forward, done)
	overran := watchDeadline(cfg.deadline, cmd.Process.Pid, done, cfg.abort)
	waitErr := cmd.Wait()
	close(done)
	if grouped {
		// The call ended with its tool: whatever it left in its group goes now (as PID 1
		// the body side then kills every other process too: killOthers).
		killGroup(cmd.Process.Pid, syscall.SIGKILL)
	}
	f.DurationMs = time.Since(start).Milliseconds()
	f.OutputLeftOpen = !pipes.drain(cfg.ioGrace)
	f = exitStatus(f, cmd.ProcessState, waitErr)
	if overran() {
		f.Reason, f.Error = frame.ReasonDeadlineExceeded, errDeadline(cfg.deadline).Error()
	}
	return f, true
}

// capture is where the key holder keeps the body's output: redacted first, then stdout's
// head and stderr's tail (stderr also copied to the holder's own stderr, the Pod log).
type capture struct {
	out        *headWriter
	errs       *tailWriter
	outW       io.Writer
	errsW      io.Writer
	redactions func() int64
}

func newCapture(cfg config, stderr io.Writer) *capture {
	c := &capture{out: &headWriter{limit: cfg.maxOutput}, errs: &tailWriter{limit: cfg.stderrTail, pass: stderr}}
	c.outW, c.errsW, c.redactions = redactOutput(redactionForms(cfg.credentials), c.out, c.errs)
	return c
}

// close writes out what the redactors held back (runProcess's copies close them
// themselves at the end of their streams).
func (c *capture) close() {
	for _, w := range []io.Writer{c.outW, c.errsW} {
		if cl, ok := w.(io.Closer); ok {
			_ = cl.Close()
		}
	}
}

// fill sets what the capture vouches for in f.
func (c *capture) fill(f frame.Frame) frame.Frame {
	f.SetStdout(c.out.kept())
	f.StdoutBytes, f.Truncated = c.out.total, c.out.truncated()
	f.StderrTail, f.StderrBytes = c.errs.tail(), c.errs.total
	f.Redactions = c.redactions()
	return f
}

// bodyEnviron is the runner's environment without the variables that are the runner's
// alone (a runner alone, or the body side, which is never given them): the frame key, so
// that the tool cannot sign a frame of its own, the credential lists with the
// TOOLGATE_SECRET_FILE_<i> copies of the secret files' values (the body reads the files;
// the variables TOOLGATE_SECRET_ENV names are the body's own and stay), and the
// TOOLGATE_REDACT_<i> values, which are for redaction only, and the egress CA (the tool
// gets the bundle made of it instead: egressTrust).
func bodyEnviron(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !runnerOnly(name) {
			out = append(out, kv)
		}
	}
	return out
}

// runnerOnly reports whether the environment variable name is kept from the body.
func runnerOnly(name string) bool {
	switch name {
	case podcontract.EnvAttemptKey, podcontract.EnvHandoverKeys, podcontract.EnvSecretEnv, podcontract.EnvSecretFiles, podcontract.EnvEgressCA:
		return true
	}
	return strings.HasPrefix(name, podcontract.EnvSecretFilePrefix) || strings.HasPrefix(name, podcontract.EnvRedactPrefix)
}

func startFailed(f frame.Frame, err error) frame.Frame {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return failed(f, frame.ReasonCommandNotFound, frame.ExitNotFound, err)
	}
	return failed(f, frame.ReasonStartError, frame.ExitStartError, err)
}

// catchSignals makes SIGTERM and SIGINT arrive on the returned channel, to be
// forwarded to the tool, for the rest of the runner's life (so that a late
// signal cannot interrupt the delivery of the frame). Every other signal a
// process can catch is caught and dropped: the tool runs as the runner's user
// and may signal it (kill -HUP 1), and the runner must outlive anything the
// tool does to write an honest frame. That includes SIGPIPE (rather than
// ignoring it, which the tool would inherit), so that a broken stdout or stderr
// is an EPIPE error rather than the runner's death, and the stop signals.
// SIGKILL and SIGSTOP cannot be caught; as PID 1 of the container the kernel
// drops them, and every signal left at its default action (signals 32 and 34,
// which the Go runtime keeps for itself), when they come from inside the
// container.
func catchSignals() <-chan os.Signal {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	signal.Notify(make(chan os.Signal, 1), droppedSignals()...) // never read: Notify drops what does not fit
	return sigs
}

// droppedSignals are the signals the runner catches and ignores: 1..64 but
// SIGKILL and SIGSTOP (uncatchable), SIGTERM and SIGINT (forwarded), SIGCHLD
// and SIGURG (ignored by default; the Go runtime preempts with SIGURG) and
// 32..34 (reserved by the C library and the Go runtime).
func droppedSignals() []os.Signal {
	var out []os.Signal
	for s := syscall.Signal(1); s <= 64; s++ {
		switch {
		case s == syscall.SIGKILL, s == syscall.SIGSTOP, s == syscall.SIGTERM, s == syscall.SIGINT,
			s == syscall.SIGCHLD, s == syscall.SIGURG, s >= 32 && s <= 34:
			continue
		}
		out = append(out, s)
	}
	return out
}

func forwardSignals(sigs <-chan os.Signal, forward func(os.Signal), done <-chan struct{}) {
	for {
		select {
		case s := <-sigs:
			forward(s)
		case <-done:
			return
		}
	}
}

// exitStatus records the tool's exit code, or the signal that killed it as
// 128+N like a shell does.
func exitStatus(f frame.Frame, st *os.ProcessState, waitErr error) frame.Frame {
	if st == nil {
		return failed(f, frame.ReasonStartError, frame.ExitStartError, waitErr)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		f.Signal = signalName(ws.Signal())
		f.ExitCode = 128 + int(ws.Signal())
		return f
	}
	f.ExitCode = st.ExitCode()
	return f
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
}

func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return fmt.Sprintf("SIG%d", int(s))
}
