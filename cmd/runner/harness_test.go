package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
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

// The test binary doubles as the runner: run with reexecEnv=1 it is the runner
// program (realMain), so the tests run the real program as a child process.
const reexecEnv = "TOOLGATE_RUNNER_TEST_REEXEC"

func TestMain(m *testing.M) {
	if os.Getenv(reexecEnv) == "1" {
		os.Exit(realMain(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

const testArgs = `{"path":"/tmp/x","text":"héllo\nwörld"}`

// testKey is the namespace's frame master; the runner gets the key derived from it for
// testCallUID's attempt 1 (testAttemptKey), as the kubelet gives it from the attempt's key
// Secret, and signs with it, as the operator expects.
var testKey = []byte("0123456789abcdef0123456789abcdef")

const (
	testCallUID = "0f6a3c1e-call-uid"
	testPodUID  = "7d2b9e40-pod-uid"
)

var testAttemptKey = frame.AttemptKey(testKey, testCallUID, 1)

func encodedAttemptKey() string { return base64.RawURLEncoding.EncodeToString(testAttemptKey) }

// invocation is one run of the runner: argv and the environment it gets.
type invocation struct {
	t    *testing.T
	dir  string
	env  map[string]string
	argv []string
	// sys sets up the runner's process: a new PID namespace (the runner is then
	// its PID 1, as in a container), another user.
	sys *syscall.SysProcAttr
	exe string // the runner executable; empty: this test binary
	// unsigned: the frame is expected unsigned (the runner had no key for the attempt);
	// outcome reads it without verifying, after checking that no key verifies it.
	unsigned bool
	// stdin is the runner's standard input (nil: none).
	stdin []byte
}

func newInvocation(t *testing.T, argv ...string) *invocation {
	t.Helper()
	dir := t.TempDir()
	return &invocation{t: t, dir: dir, argv: argv, env: map[string]string{
		podcontract.EnvArgs:            testArgs,
		podcontract.EnvArgsDigest:      frame.DigestOf([]byte(testArgs)),
		podcontract.EnvArgsFile:        filepath.Join(dir, "toolgate", "args.json"),
		podcontract.EnvTerminationPath: filepath.Join(dir, "termination-log"),
		podcontract.EnvAttemptKey:      encodedAttemptKey(),
	}}
}

func (in *invocation) command(ctx context.Context) *exec.Cmd {
	exe := in.exe
	if exe == "" {
		exe = os.Args[0]
	}
	cmd := exec.CommandContext(ctx, exe, in.argv...)
	cmd.SysProcAttr = in.sys
	if in.stdin != nil {
		cmd.Stdin = bytes.NewReader(in.stdin)
	}
	// GOCOVERDIR keeps a -cover test binary quiet when it runs as the runner.
	cmd.Env = []string{reexecEnv + "=1", "PATH=" + os.Getenv("PATH"), "GOCOVERDIR=" + in.coverDir()}
	for k, v := range in.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

func (in *invocation) coverDir() string {
	if d := os.Getenv("GOCOVERDIR"); d != "" {
		return d
	}
	d := filepath.Join(in.dir, "cover")
	if err := os.MkdirAll(d, 0o755); err != nil {
		in.t.Fatal(err)
	}
	return d
}

type outcome struct {
	code   int
	stdout []byte // the runner's stdout: the container log's stdout part
	stderr []byte
	term   []byte // termination message
	frame  frame.Frame
}

// run runs the runner to completion and decodes its frame.
func (in *invocation) run() outcome {
	in.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := in.command(ctx)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	return in.outcome(cmd, stdout.Bytes(), stderr.Bytes())
}

func (in *invocation) outcome(cmd *exec.Cmd, stdout, stderr []byte) outcome {
	in.t.Helper()
	o := outcome{code: cmd.ProcessState.ExitCode(), stdout: stdout, stderr: stderr}
	term, err := os.ReadFile(in.env[podcontract.EnvTerminationPath])
	if err != nil {
		in.t.Fatalf("no termination message (exit %d, stderr %q): %v", o.code, stderr, err)
	}
	o.term = term
	if len(term) > frame.MaxTerminationMessage {
		in.t.Fatalf("termination message is %d bytes", len(term))
	}
	if in.unsigned {
		o.frame = in.unsignedFrame(term)
		return o
	}
	dec := frame.Decoder{Key: testAttemptKey}
	f, needLog, err := dec.DecodeTermination(string(term))
	if err != nil {
		in.t.Fatalf("DecodeTermination(%.200q): %v", term, err)
	}
	if needLog {
		if f, err = dec.DecodeLog(stdout, f); err != nil {
			in.t.Fatalf("DecodeLog: %v", err)
		}
	} else if len(stdout) != 0 {
		in.t.Errorf("runner wrote %d bytes to stdout without a log block", len(stdout))
	}
	if f.ExitCode != o.code {
		in.t.Errorf("frame exit code %d, runner exited %d", f.ExitCode, o.code)
	}
	o.frame = f
	return o
}

func (o outcome) stdoutData(t *testing.T) []byte {
	t.Helper()
	b, err := o.frame.StdoutData()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sh returns argv running script with /bin/sh after the "--" separator.
func sh(script string) []string { return []string{"--", "/bin/sh", "-c", script} }

func wantReason(t *testing.T, o outcome, code int, reason string) {
	t.Helper()
	if o.code != code || o.frame.Reason != reason {
		t.Fatalf("exit %d reason %q, want %d %q (error %q)", o.code, o.frame.Reason, code, reason, o.frame.Error)
	}
	if !strings.Contains(string(o.stderr), reason) {
		t.Errorf("runner stderr does not mention %s: %q", reason, o.stderr)
	}
}

// unsignedFrame reads a termination message the runner wrote without a key: a JSON frame
// that no key verifies.
func (in *invocation) unsignedFrame(term []byte) frame.Frame {
	in.t.Helper()
	if _, _, err := (frame.Decoder{Keys: [][]byte{testKey, testAttemptKey}}).DecodeTermination(string(term)); !errors.Is(err, frame.ErrUnsigned) {
		in.t.Fatalf("the frame %.200q is not unsigned: %v", term, err)
	}
	var f frame.Frame
	if err := json.Unmarshal(term, &f); err != nil {
		in.t.Fatalf("unsigned frame %.200q: %v", term, err)
	}
	return f
}
