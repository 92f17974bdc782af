package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// runWarm runs the runner in warm mode with stdin as its standard input and returns the
// outcome decoded from the termination message, plus what its stdout's result line holds.
func runWarm(t *testing.T, in *invocation, stdin []byte) (outcome, string) {
	t.Helper()
	delete(in.env, envArgs)
	delete(in.env, envArgsDigest)
	in.env[podcontract.EnvWarm] = "1"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := in.command(ctx)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
	_ = cmd.Run()
	line, ok := frame.LastResultLine(stdout.Bytes())
	if !ok {
		t.Fatalf("no result line on stdout %q (stderr %q)", stdout.Bytes(), stderr.Bytes())
	}
	return in.outcome(cmd, nil, stderr.Bytes()), line
}

func handoverLine(t *testing.T, h frame.Handover) []byte {
	t.Helper()
	b, err := frame.EncodeHandover(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWarmHandoverRunsBodyWithFrozenBytes(t *testing.T) {
	in := newInvocation(t, sh(`cat; printf '|%s' "$TRACEPARENT"`)...)
	in.env[envArgsFile] = noArgsFile
	h := frame.Handover{Arguments: []byte(testArgs), ArgumentsDigest: frame.DigestOf([]byte(testArgs)), Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	o, line := runWarm(t, in, handoverLine(t, h))
	if o.code != 0 || o.frame.Reason != "" {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
	if got, want := o.frame.Stdout, testArgs+"|"+h.Traceparent; got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
	if line != string(o.term) {
		t.Fatalf("the result line %q is not the termination message %q", line, o.term)
	}
}

func TestWarmDigestMismatchDoesNotRunBody(t *testing.T) {
	in := newInvocation(t, sh(`touch "$MARK"`)...)
	mark := filepath.Join(in.dir, "ran")
	in.env["MARK"] = mark
	h := frame.Handover{Arguments: []byte(testArgs), ArgumentsDigest: frame.DigestOf([]byte(`{"path":"/etc/shadow"}`))}
	o, _ := runWarm(t, in, handoverLine(t, h))
	wantReason(t, o, frame.ExitRunnerError, frame.ReasonArgumentsDigestMismatch)
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the body ran with altered arguments")
	}
}

func TestWarmWithoutHandoverDoesNotRunBody(t *testing.T) {
	for name, stdin := range map[string]string{"closed": "", "malformed": "{\"arguments\":1}\n"} {
		t.Run(name, func(t *testing.T) {
			in := newInvocation(t, sh(`touch "$MARK"`)...)
			mark := filepath.Join(in.dir, "ran")
			in.env["MARK"] = mark
			o, _ := runWarm(t, in, []byte(stdin))
			wantReason(t, o, frame.ExitRunnerError, frame.ReasonInvalidConfiguration)
			if !strings.Contains(o.frame.Error, "no arguments were handed over") {
				t.Fatalf("error %q", o.frame.Error)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("the body ran without a handover")
			}
		})
	}
}

// An idle pool Pod deleted: SIGTERM while waiting for a Handover ends the runner at once,
// without running the body or writing a frame.
func TestWarmStoppedWhileIdle(t *testing.T) {
	in := newInvocation(t, sh(`touch "$MARK"`)...)
	mark := filepath.Join(in.dir, "ran")
	in.env["MARK"] = mark
	delete(in.env, envArgs)
	delete(in.env, envArgsDigest)
	in.env[podcontract.EnvWarm] = "1"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := in.command(ctx)
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinW.Close()
	stderrR, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = stdinR
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdinR.Close()
	// The runner says it waits once its signal handlers are in place.
	line, err := bufio.NewReader(stderrR).ReadString('\n')
	if err != nil || !strings.Contains(line, "waiting for a call") {
		t.Fatalf("stderr %q (%v)", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("runner ended %v", err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the body ran")
	}
	if _, err := os.Stat(in.env[envTerminationPath]); err == nil {
		t.Fatal("a frame was written for a call that never came")
	}
}
