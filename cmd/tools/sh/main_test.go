package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// needBusybox makes the tool's busybox available: the real one where Debian's
// busybox-static is installed, otherwise a stand-in that runs `busybox sh ARGS` as the
// system's /bin/sh (the tool's own logic is what these tests check).
func needBusybox(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(busybox()); err == nil {
		return
	}
	shim := filepath.Join(t.TempDir(), "busybox")
	if err := os.WriteFile(shim, []byte("#!/bin/sh\nshift\nexec /bin/sh \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLGATE_BUSYBOX", shim)
}

func TestRunReturnsStdout(t *testing.T) {
	needBusybox(t)
	got, err := run([]byte(`{"command":"echo hello; echo oops >&2"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := got.(result)
	if r.IsError || r.ExitCode != 0 || r.Stdout != "hello\n" || r.Stderr != "oops\n" {
		t.Fatalf("%+v", r)
	}
}

func TestRunNonZeroIsError(t *testing.T) {
	needBusybox(t)
	got, err := run([]byte(`{"command":"echo no such thing >&2; exit 3"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := got.(result)
	if !r.IsError || r.ExitCode != 3 || r.Error != "the command exited with code 3: no such thing" {
		t.Fatalf("%+v", r)
	}
}

func TestRunRejectsEmpty(t *testing.T) {
	if _, err := run([]byte(`{"command":"  "}`)); err == nil {
		t.Fatal("want an error")
	}
}

func TestCappedKeepsValidUTF8(t *testing.T) {
	var c capped
	_, _ = c.Write([]byte(strings.Repeat("a", maxStream-1) + "é and more"))
	s := c.String()
	if !strings.HasPrefix(s, strings.Repeat("a", maxStream-1)+"\n[") {
		t.Fatalf("tail %q", s[maxStream-8:])
	}
}
