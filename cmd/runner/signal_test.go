package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startAndSignal starts the runner, waits until the tool prints "ready" on
// stderr (passed through by the runner), sends SIGTERM to the runner and waits
// for it to exit.
func startAndSignal(t *testing.T, in *invocation) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := in.command(ctx)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stderr)
	line, err := r.ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("tool did not get ready: %q %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	out, _ := io.ReadAll(stdout)
	_ = cmd.Wait()
	return in.outcome(cmd, out, append([]byte(line), rest...))
}

// readyLoop is a tool that announces readiness once its handler is set and then
// waits without holding the runner's pipes in a child process for long.
const readyLoop = `echo ready >&2; while :; do sleep 0.05; done`

func TestSIGTERMForwardedAndTrapped(t *testing.T) {
	o := startAndSignal(t, newInvocation(t, sh(`trap 'echo cleaned; exit 143' TERM; `+readyLoop)...))
	if o.code != 143 || o.frame.Signal != "" || o.frame.Stdout != "cleaned\n" {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
}

func TestSIGTERMForwardedKills(t *testing.T) {
	// No trap: SIGTERM kills the shell that is the tool.
	o := startAndSignal(t, newInvocation(t, sh(readyLoop)...))
	if o.code != 143 || o.frame.Signal != "SIGTERM" {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
	if !strings.HasPrefix(o.frame.StderrTail, "ready\n") {
		t.Fatalf("stderr tail %q", o.frame.StderrTail)
	}
}
