package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
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

// execute verifies the arguments, runs the tool and returns the frame to
// deliver. Its ExitCode is the runner's exit code.
func execute(cfg config, sigs <-chan os.Signal, stderr io.Writer) frame.Frame {
	// The frame names the arguments the runner was asked to serve (the call's digest): the
	// operator believes no frame for other arguments.
	f := frame.Frame{ArgsDigest: cfg.argsDigest}
	if err := checkCredentials(cfg.credentials); err != nil {
		// The error names the credentials (variables, files), never their values.
		return failed(f, frame.ReasonCredentialTooShort, frame.ExitRunnerError, err)
	}
	if got := frame.DigestOf(cfg.args); got != cfg.argsDigest {
		// The digests are for the Pod log (operators); the frame's error reaches the model.
		logf(stderr, "%s is %q but the arguments hash to %q", podcontract.EnvArgsDigest, cfg.argsDigest, got)
		return failed(f, frame.ReasonArgumentsDigestMismatch, frame.ExitRunnerError, errArgumentsAltered)
	}
	if err := writeArgsFile(cfg.argsFile, cfg.args); err != nil {
		return failed(f, frame.ReasonArgumentsFileError, frame.ExitRunnerError, err)
	}
	if err := protectKey(); err != nil {
		return failed(f, frame.ReasonStartError, frame.ExitStartError, fmt.Errorf("protecting the frame key: %w", err))
	}
	return redactError(runTool(cfg, f, sigs, stderr), cfg.credentials)
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
	out := &headWriter{limit: cfg.maxOutput}
	errs := &tailWriter{limit: cfg.stderrTail, pass: stderr}
	outW, errsW, redactions := redactOutput(redactionForms(cfg.credentials), out, errs)
	cmd := exec.Command(cfg.command[0], cfg.command[1:]...)
	cmd.Env = append(bodyEnviron(os.Environ()), podcontract.EnvArgsFile+"="+bodyArgsFile(cfg.argsFile))
	if cfg.traceparent != "" {
		cmd.Env = append(cmd.Env, podcontract.EnvTraceparent+"="+cfg.traceparent)
	}
	pipes, err := newStdio(cmd)
	if err != nil {
		return failed(f, frame.ReasonStartError, frame.ExitStartError, err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pipes.closeAll()
		return startFailed(f, err)
	}
	pipes.run(cfg.args, outW, errsW)
	done := make(chan struct{})
	go forwardSignals(sigs, cmd.Process, done)
	waitErr := cmd.Wait()
	close(done)
	f.DurationMs = time.Since(start).Milliseconds()
	f.OutputLeftOpen = !pipes.drain(cfg.ioGrace)

	f.SetStdout(out.kept())
	f.StdoutBytes, f.Truncated = out.total, out.truncated()
	f.StderrTail, f.StderrBytes = errs.tail(), errs.total
	f.Redactions = redactions()
	return exitStatus(f, cmd.ProcessState, waitErr)
}

// bodyEnviron is the runner's environment without the variables that are the runner's
// alone: the frame master keys, so that the tool cannot sign a frame of its own (nor one
// of any other call of the namespace), and the credential lists with the
// TOOLGATE_SECRET_FILE_<i> copies of the secret files' values (the body reads the files;
// the variables TOOLGATE_SECRET_ENV names are the body's own and stay).
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
	case podcontract.EnvFrameKey, podcontract.EnvFrameKeyPrevious, podcontract.EnvSecretEnv, podcontract.EnvSecretFiles:
		return true
	}
	return strings.HasPrefix(name, podcontract.EnvSecretFilePrefix)
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

func forwardSignals(sigs <-chan os.Signal, p *os.Process, done <-chan struct{}) {
	for {
		select {
		case s := <-sigs:
			_ = p.Signal(s)
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
