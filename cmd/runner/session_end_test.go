package main

import (
	"crypto/tls"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// A call past its deadline is stopped by the runner (SIGTERM to its process group, as the
// frame's signal says), its frame says DeadlineExceeded, and the session ends: the Pod
// that let a call overrun is not reused.
func TestSessionDeadlineStopsTheCallAndEndsTheSession(t *testing.T) {
	p := newSessionPod(t)
	p.start()
	op := p.operator()
	h := sessionCall("call-slow", `{"op":"sleep"}`)
	h.DeadlineMs = 300
	term, err := op.call(resign(h))
	if err != nil {
		t.Fatal(err)
	}
	f := decodeFor(t, "call-slow", term)
	if f.Reason != frame.ReasonDeadlineExceeded || f.Signal != "SIGTERM" || f.ExitCode != 128+int(syscall.SIGTERM) || strings.Contains(f.Stdout, "late") {
		t.Fatalf("frame %+v", f)
	}
	if s, _ := p.wait(); s != frame.ExitRunnerError || p.endReason() != frame.ReasonDeadlineExceeded {
		t.Fatalf("signer exit %d, log %q", s, p.serr.String())
	}
}

// Only the operator gets in: a client without a certificate, or with one another CA
// issued, is refused at the handshake and runs nothing; the operator's connection works
// after them.
func TestSessionListenerRequiresTheOperatorsCertificate(t *testing.T) {
	p := newSessionPod(t)
	p.start()
	for name, cert := range map[string]*tls.Certificate{"no certificate": nil, "another CA's": &p.rogue} {
		o, err := p.dial(cert)
		if err == nil {
			_, err = o.call(sessionCall("call-"+strings.ReplaceAll(name, " ", "-"), `{"op":"mark"}`))
		}
		if err == nil {
			t.Fatalf("%s: a call went through", name)
		}
	}
	if _, err := os.Stat(filepath.Join(p.ws, "ran")); err == nil {
		t.Fatal("the tool ran for a client that is not the operator")
	}
	term, err := p.operator().call(sessionCall("call-ok", `{"op":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if f := decodeFor(t, "call-ok", term); f.Stdout != `{"op":"x"}` {
		t.Fatalf("frame %+v", f)
	}
	if !strings.Contains(p.serr.String(), "session: refused a connection") {
		t.Fatalf("the refusals are not in the signer's log: %q", p.serr.String())
	}
	p.stop()
}

// A newer connection of the operator replaces the older one (which may be half-open after
// a network break): the older is closed, the session continues on the newer.
func TestSessionNewConnectionReplacesTheOld(t *testing.T) {
	p := newSessionPod(t)
	p.start()
	old := p.operator()
	if _, err := old.call(sessionCall("call-old", `{"op":"x"}`)); err != nil {
		t.Fatal(err)
	}
	op := p.operator()
	term, err := op.call(sessionCall("call-new", `{"op":"y"}`))
	if err != nil {
		t.Fatal(err)
	}
	if f := decodeFor(t, "call-new", term); f.Stdout != `{"op":"y"}` {
		t.Fatalf("frame %+v", f)
	}
	if _, err := old.call(sessionCall("call-late", `{"op":"z"}`)); err == nil {
		t.Fatal("the replaced connection still serves")
	}
	p.stop()
}

// killDaemon ends, after the test, a daemon a session call left (when the runner failed to).
func killDaemon(t *testing.T, pidFile string) {
	t.Cleanup(func() {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL) // gone (ESRCH), a zombie, or left by a failure
		}
	})
}

// As PID 1 of its PID namespace (its container) the body side also kills what left the
// tool's process group (setsid): the one-shot runner's killOthers, after every call. The
// daemon holds a FIFO's write end: the test's read end sees EOF once it is dead.
func TestSessionKillsEscapedDaemonAsPID1(t *testing.T) {
	p := newSessionPod(t)
	asPID1(t, p.body)
	alivePath := filepath.Join(p.body.dir, "alive")
	if err := syscall.Mkfifo(alivePath, 0o600); err != nil {
		t.Fatal(err)
	}
	alive, err := os.OpenFile(alivePath, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer alive.Close()
	p.body.env["ALIVE"] = alivePath
	p.start()
	term, err := p.operator().call(sessionCall("call-escape", `{"op":"escape"}`))
	if err != nil {
		t.Fatal(err)
	}
	if f := decodeFor(t, "call-escape", term); f.Stdout != "started\n" {
		t.Fatalf("frame %+v", f)
	}
	// The reply comes after the reset: the daemon is gone by now.
	_ = alive.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := alive.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("the daemon that left the tool's group outlived its call (read: %v)", err)
	}
	p.stop()
}

// The workspace, and any directory in it or holding it, is never wiped; nor is "/" or a
// relative path.
func TestWipeable(t *testing.T) {
	ws := podcontract.WorkspaceMountPath
	for dir, want := range map[string]bool{
		"/tmp": true, "/home/tool": true, "/dev/shm/": true,
		"/": false, "": false, "tmp": false, ws: false, ws + "/home": false, ws + "/../" + filepath.Base(ws) + "/x": false,
	} {
		if got := wipeable(dir, ws); got != want {
			t.Errorf("wipeable(%q) = %v", dir, got)
		}
	}
	if wipeable("/data", "/data/ws") {
		t.Error("a directory holding the workspace is wipeable")
	}
}
