package main

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

func TestArgsOnStdinAndInFile(t *testing.T) {
	in := newInvocation(t, sh(`cat; printf '|'; cat "$`+podcontract.EnvArgsFile+`"`)...)
	o := in.run()
	if o.code != 0 || o.frame.Reason != "" || o.frame.Signal != "" {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
	if got, want := o.frame.Stdout, testArgs+"|"+testArgs; got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
	if o.frame.ArgsDigest != frame.DigestOf([]byte(testArgs)) {
		t.Fatalf("argsDigest %q", o.frame.ArgsDigest)
	}
	onDisk, err := os.ReadFile(in.env[podcontract.EnvArgsFile])
	if err != nil || string(onDisk) != testArgs {
		t.Fatalf("args file %q (%v)", onDisk, err)
	}
	if o.frame.Truncated || o.frame.StdoutBytes != int64(2*len(testArgs)+1) || !o.frame.StdoutIsUTF8() {
		t.Fatalf("frame %+v", o.frame)
	}
}

// With "-" as the arguments file (a Pod without scratch volumes) the runner writes no
// file and the body sees an empty $TOOLGATE_ARGS_FILE but still gets stdin.
func TestNoArgsFile(t *testing.T) {
	in := newInvocation(t, sh(`cat; printf '|%s|' "$`+podcontract.EnvArgsFile+`"; [ ! -e ./- ] && echo nofile`)...)
	in.env[podcontract.EnvArgsFile] = podcontract.NoArgsFile
	o := in.run()
	if o.code != 0 || o.frame.Reason != "" {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
	if got, want := o.frame.Stdout, testArgs+"||nofile\n"; got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
}

func TestDigestMismatchDoesNotRunTool(t *testing.T) {
	in := newInvocation(t, sh(`touch "$MARK"`)...)
	mark := filepath.Join(in.dir, "ran")
	in.env["MARK"] = mark
	in.env[podcontract.EnvArgsDigest] = frame.DigestOf([]byte(`{"path":"/etc/shadow"}`))
	o := in.run()
	wantReason(t, o, frame.ExitRunnerError, frame.ReasonArgumentsDigestMismatch)
	if strings.Contains(o.frame.Error, frame.DigestPrefix) || !strings.Contains(o.frame.Error, "not run") {
		t.Errorf("the frame's error (read by the model) must say plainly what happened, without digests: %q", o.frame.Error)
	}
	if !strings.Contains(string(o.stderr), in.env[podcontract.EnvArgsDigest]) {
		t.Errorf("the Pod log should name the expected digest for operators: %q", o.stderr)
	}
	for _, p := range []string{mark, in.env[podcontract.EnvArgsFile]} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists: the tool ran or the args were written", p)
		}
	}
	delete(in.env, podcontract.EnvArgsDigest)
	wantReason(t, in.run(), frame.ExitRunnerError, frame.ReasonArgumentsDigestMismatch)
}

func TestExitCodeAndStderr(t *testing.T) {
	o := newInvocation(t, sh(`echo out; echo problem >&2; exit 3`)...).run()
	if o.code != 3 || o.frame.Reason != "" || o.frame.Stdout != "out\n" {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
	if o.frame.StderrTail != "problem\n" || o.frame.StderrBytes != 8 || string(o.stderr) != "problem\n" {
		t.Fatalf("stderr tail %q, passthrough %q", o.frame.StderrTail, o.stderr)
	}
}

func TestKilledBySignal(t *testing.T) {
	o := newInvocation(t, sh(`echo partial; kill -KILL $$`)...).run()
	if o.code != 137 || o.frame.Signal != "SIGKILL" || o.frame.Stdout != "partial\n" {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
}

func TestStdoutTruncatedChildNotBlocked(t *testing.T) {
	o := newInvocation(t, "--", "head", "-c", "5000000", "/dev/zero").run()
	if o.code != 0 || !o.frame.Truncated || o.frame.StdoutBytes != 5000000 {
		t.Fatalf("exit %d truncated %v total %d", o.code, o.frame.Truncated, o.frame.StdoutBytes)
	}
	if got := o.stdoutData(t); !bytes.Equal(got, make([]byte, defaultMaxOutput)) {
		t.Fatalf("kept %d bytes", len(got))
	}
}

func TestNonUTF8Stdout(t *testing.T) {
	o := newInvocation(t, sh(`printf 'ok\377\376'`)...).run()
	if o.frame.StdoutIsUTF8() || !bytes.Equal(o.stdoutData(t), []byte("ok\xff\xfe")) {
		t.Fatalf("frame %+v", o.frame)
	}
	// A cut inside a UTF-8 character keeps the text UTF-8.
	in := newInvocation(t, sh(`printf 'abc\303\251'`)...)
	in.env[podcontract.EnvMaxOutput] = "4"
	o = in.run()
	if !o.frame.StdoutIsUTF8() || o.frame.Stdout != "abc" || !o.frame.Truncated || o.frame.StdoutBytes != 5 {
		t.Fatalf("frame %+v", o.frame)
	}
}

func TestLargeOutputInLog(t *testing.T) {
	data := make([]byte, 3<<20)
	_, _ = rand.Read(data)
	in := newInvocation(t, sh(`echo before >&2; cat "$DATA"; echo after >&2`)...)
	in.env["DATA"] = filepath.Join(in.dir, "data")
	in.env[podcontract.EnvMaxOutput] = "4194304"
	if err := os.WriteFile(in.env["DATA"], data, 0o644); err != nil {
		t.Fatal(err)
	}
	o := in.run()
	dec := frame.Decoder{Key: testAttemptKey, MaxOutput: 4194304}
	ptr, needLog, err := dec.DecodeTermination(string(o.term))
	if err != nil || !needLog || ptr.StdoutBytes != int64(len(data)) || ptr.ExitCode != 0 {
		t.Fatalf("pointer %+v needLog %v err %v", ptr, needLog, err)
	}
	if !bytes.Equal(o.stdoutData(t), data) || o.frame.StdoutIsUTF8() || o.frame.Truncated {
		t.Fatal("stdout not recovered exactly from the log")
	}
	if !bytes.HasSuffix(o.stdout, []byte("-end "+ptr.SHA256[len(frame.DigestPrefix):][:12]+"--\n")) {
		t.Fatal("log block is not at the end of stdout")
	}
	if string(o.stderr) != "before\nafter\n" || o.frame.StderrTail != "before\nafter\n" {
		t.Fatalf("stderr %q tail %q", o.stderr, o.frame.StderrTail)
	}
	// The block does not fit the operator's read bounds only by accident.
	if tl, lb := dec.LogReadBounds(ptr); tl < ptr.LogLines || lb < int64(len(o.stdout))-1 {
		t.Fatalf("read bounds %d lines %d bytes for a %d-byte block", tl, lb, len(o.stdout))
	}
}

func TestStderrTailBounded(t *testing.T) {
	in := newInvocation(t, sh(`head -c 100000 /dev/zero | tr '\0' x >&2; printf 'é END' >&2`)...)
	in.env[podcontract.EnvStderrTail] = "100"
	o := in.run()
	tail := o.frame.StderrTail
	if len(tail) > 100 || !strings.HasSuffix(tail, "xxé END") || o.frame.StderrBytes != 100006 {
		t.Fatalf("tail %q (%d bytes), stderrBytes %d", tail, len(tail), o.frame.StderrBytes)
	}
	if len(o.stderr) != 100006 {
		t.Fatalf("passthrough %d bytes", len(o.stderr))
	}
}

func TestCommandNotFoundOrNotExecutable(t *testing.T) {
	wantReason(t, newInvocation(t, "--", "no-such-tool-xyz").run(), frame.ExitNotFound, frame.ReasonCommandNotFound)
	wantReason(t, newInvocation(t, "--", "/no/such/tool").run(), frame.ExitNotFound, frame.ReasonCommandNotFound)
	in := newInvocation(t)
	script := filepath.Join(in.dir, "tool.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in.argv = []string{"--", script}
	wantReason(t, in.run(), frame.ExitStartError, frame.ReasonStartError)
}

// A tool that never reads stdin, with arguments larger than a pipe buffer,
// does not block the runner.
func TestToolIgnoringStdin(t *testing.T) {
	big := `{"blob":"` + strings.Repeat("a", 100<<10) + `"}`
	in := newInvocation(t, sh(`echo done`)...)
	in.env[podcontract.EnvArgs], in.env[podcontract.EnvArgsDigest] = big, frame.DigestOf([]byte(big))
	if o := in.run(); o.code != 0 || o.frame.Stdout != "done\n" {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
}

// A background process that keeps the output pipes open is cut off after the
// grace period and reported.
func TestOutputLeftOpen(t *testing.T) {
	in := newInvocation(t, append([]string{"--io-grace=100ms"}, sh(`sleep 5 & echo hi`)...)...)
	o := in.run()
	if o.code != 0 || o.frame.Stdout != "hi\n" || !o.frame.OutputLeftOpen {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
}
