package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// The tool body is hostile: it runs as the runner's user, may signal it, may
// leave processes behind and may look for the frame key. Whatever it does, the
// runner writes an honest, signed frame.

// asPID1 makes the invocation run the runner as PID 1 of a new PID namespace,
// as in a container (the test runs as root), or skips the test.
func asPID1(t *testing.T, in *invocation) {
	t.Helper()
	probe := newInvocation(t, sh(`exit 0`)...)
	probe.sys = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	cmd := probe.command(context.Background())
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Skipf("cannot create a PID namespace here: %v", err)
		}
	}
	in.sys = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
}

// signalList renders signals for a shell's kill.
func signalList(sigs []syscall.Signal) string {
	var b strings.Builder
	for _, s := range sigs {
		fmt.Fprintf(&b, " %d", int(s))
	}
	return b.String()
}

// bodySendingSignals signals pid with each signal, then reports.
func bodySendingSignals(pid string, sigs []syscall.Signal) []string {
	return sh(`for s in` + signalList(sigs) + `; do kill -$s ` + pid + ` || echo "kill -$s failed" >&2; done; sleep 0.1; echo survived`)
}

func wantHonest(t *testing.T, o outcome) {
	t.Helper()
	if o.code != 0 || o.frame.Reason != "" || o.frame.Stdout != "survived\n" {
		t.Fatalf("exit %d frame %+v stderr %q", o.code, o.frame, o.stderr)
	}
}

// TestSurvivesSignalsFromTheTool: the tool sends its parent, the runner, every
// signal the runner can catch (all but SIGKILL and SIGSTOP, SIGTERM and SIGINT,
// which are forwarded back to the tool, and 32 and 34, which the Go runtime
// leaves at their default action). The runner outlives them all.
func TestSurvivesSignalsFromTheTool(t *testing.T) {
	var sigs []syscall.Signal
	for s := syscall.Signal(1); s <= 64; s++ {
		if s != syscall.SIGKILL && s != syscall.SIGSTOP && s != syscall.SIGTERM && s != syscall.SIGINT && s != 32 && s != 34 {
			sigs = append(sigs, s)
		}
	}
	wantHonest(t, newInvocation(t, bodySendingSignals("$PPID", sigs)...).run())
}

// TestSurvivesEverySignalAsPID1: as PID 1 of its PID namespace (as in a
// container: kill -HUP 1), the runner outlives every signal 1..64 the tool can
// send it, SIGKILL and SIGSTOP included (the kernel drops those, and any signal
// left at its default action, for a namespace's init).
func TestSurvivesEverySignalAsPID1(t *testing.T) {
	var sigs []syscall.Signal
	for s := syscall.Signal(1); s <= 64; s++ {
		if s != syscall.SIGTERM && s != syscall.SIGINT {
			sigs = append(sigs, s)
		}
	}
	in := newInvocation(t, bodySendingSignals("1", sigs)...)
	asPID1(t, in)
	wantHonest(t, in.run())
}

// TestKillsLeftoversBeforeWritingAsPID1: a process the tool left behind (which
// could overwrite the termination message) is dead by the time the runner, as
// PID 1, delivers its frame. The tool's output is large and incompressible, so
// the frame goes to the log, which the runner writes before the termination
// message: the test reads its first bytes and leaves the rest in the pipe, so
// the runner waits in delivery while the test looks. The leftover holds the
// only writer of a FIFO, so the test sees whether it is still alive then.
func TestKillsLeftoversBeforeWritingAsPID1(t *testing.T) {
	in := newInvocation(t, sh(`(exec 3>"$ALIVE"; : > "$READY"; exec sleep 60) </dev/null >/dev/null 2>&1 &
while [ ! -e "$READY" ]; do sleep 0.01; done; head -c 300000 /dev/urandom`)...)
	asPID1(t, in)
	in.env["ALIVE"], in.env["READY"] = filepath.Join(in.dir, "alive"), filepath.Join(in.dir, "ready")
	if err := syscall.Mkfifo(in.env["ALIVE"], 0o600); err != nil {
		t.Fatal(err)
	}
	alive, err := os.OpenFile(in.env["ALIVE"], os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer alive.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := in.command(ctx)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 16)
	if _, err := io.ReadFull(stdout, head); err != nil {
		t.Fatalf("the runner delivered nothing: %v", err)
	}
	_ = alive.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := alive.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the leftover process is alive while the runner delivers its frame (read: %v)", err)
	}
	rest, _ := io.ReadAll(stdout)
	_ = cmd.Wait()
	o := in.outcome(cmd, append(head, rest...), nil)
	if o.code != 0 || o.frame.StdoutBytes != 300000 {
		t.Fatalf("exit %d frame of %d stdout bytes", o.code, o.frame.StdoutBytes)
	}
}

// TestFrameKeyHiddenFromTool: the tool's environment has no frame key, and the runner
// still signs with the attempt's key.
func TestFrameKeyHiddenFromTool(t *testing.T) {
	in := newInvocation(t, sh(`env`)...)
	o := in.run() // run decodes with testAttemptKey: the frame is signed for the attempt
	for _, leak := range []string{podcontract.EnvAttemptKey, encodedAttemptKey()} {
		if strings.Contains(o.frame.Stdout, leak) {
			t.Fatalf("the tool sees the frame key (%s):\n%s", leak, o.frame.Stdout)
		}
	}
	if !strings.Contains(o.frame.Stdout, podcontract.EnvArgsDigest+"=") {
		t.Fatalf("the tool's environment lost the rest: %s", o.frame.Stdout)
	}
}

// TestFrameKeyUnreadableThroughProc: a tool of the runner's (non-root) user can
// read neither the runner's environment nor its memory through /proc.
func TestFrameKeyUnreadableThroughProc(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the runner as another user")
	}
	dir, err := os.MkdirTemp("", "runner-uid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "runner")
	if err := copyFile(os.Args[0], exe); err != nil {
		t.Fatal(err)
	}
	in := newInvocation(t, sh(`for f in environ mem; do
  if head -c 1 /proc/$PPID/$f >/dev/null 2>&1; then echo "$f readable"; else echo "$f protected"; fi
done`)...)
	in.exe = exe
	in.dir = dir
	in.env[podcontract.EnvArgsFile] = filepath.Join(dir, "args.json")
	in.env[podcontract.EnvTerminationPath] = filepath.Join(dir, "termination-log")
	in.sys = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	o := in.run()
	if o.frame.Stdout != "environ protected\nmem protected\n" {
		t.Fatalf("the tool reads the runner through /proc: %q (stderr %q)", o.frame.Stdout, o.stderr)
	}
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// TestUnsignedWithoutKey: without a key the runner still reports, unsigned, and
// says so; a decoder refuses the frame.
func TestUnsignedWithoutKey(t *testing.T) {
	in := newInvocation(t, sh(`echo hi`)...)
	delete(in.env, podcontract.EnvAttemptKey)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := in.command(ctx).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "not signed") {
		t.Fatalf("runner: %v, output %q", err, out)
	}
	term, err := os.ReadFile(in.env[podcontract.EnvTerminationPath])
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := (frame.Decoder{Key: testAttemptKey}).DecodeTermination(string(term)); !errors.Is(err, frame.ErrUnsigned) {
		t.Fatalf("decoding an unsigned frame: %v", err)
	}
}

func TestBadKeyIsInvalidConfiguration(t *testing.T) {
	in := newInvocation(t, sh(`echo ran`)...)
	in.env[podcontract.EnvAttemptKey] = "short"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := in.command(ctx)
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != frame.ExitRunnerError || !strings.Contains(string(out), frame.ReasonInvalidConfiguration) ||
		strings.Contains(string(out), "ran") {
		t.Fatalf("exit %d, output %q", code, out)
	}
}
