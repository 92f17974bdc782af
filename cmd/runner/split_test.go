package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
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

// pair is a tool Pod's two runners: the signer (holding the attempt key, as its container
// does) and the body side (holding none), joined at a Unix socket of their own.
type pair struct {
	signer, body *invocation
}

func newPair(t *testing.T, script string) *pair {
	t.Helper()
	signer := newInvocation(t, podcontract.SignFlag)
	body := newInvocation(t, append([]string{podcontract.BodyFlag}, sh(script)...)...)
	// The body's container holds no key, no arguments: only what the signer sends.
	body.env = map[string]string{
		podcontract.EnvTerminationPath: filepath.Join(body.dir, "termination-log"),
	}
	addr, abstract := socketPath(t), abstractName(t)
	signer.env[podcontract.EnvSignerSocket], signer.env[podcontract.EnvSignerAbstract] = addr, abstract
	body.env[podcontract.EnvSignerSocket], body.env[podcontract.EnvSignerAbstract] = addr, abstract
	return &pair{signer: signer, body: body}
}

// abstractName is an abstract socket name of the test's own (the namespace is the
// machine's network namespace's, shared by every test process).
func abstractName(t *testing.T) string {
	t.Helper()
	return "@toolgate-test-" + strings.ReplaceAll(filepath.Base(socketPath(t)), ".", "-") + "-" + filepath.Base(filepath.Dir(socketPath(t)))
}

// The two halves find each other whichever socket the Pod offers: the abstract one alone
// (a Pod without the link volume, whose containers share the network namespace), or the
// file in the link volume alone (containers that do not share it, as each gVisor sandbox of
// the local cluster: the body side's abstract name reaches nothing).
func TestSplitLinksOverEitherSocket(t *testing.T) {
	for name, setup := range map[string]func(p *pair){
		"abstract only": func(p *pair) {
			p.signer.env[podcontract.EnvSignerSocket] = "/nonexistent/link/signer.sock"
			p.body.env[podcontract.EnvSignerSocket] = "/nonexistent/link/signer.sock"
		},
		"file only": func(p *pair) { p.body.env[podcontract.EnvSignerAbstract] = abstractName(t) },
	} {
		t.Run(name, func(t *testing.T) {
			p := newPair(t, `cat`)
			setup(p)
			if o, code := p.run(nil); o.code != 0 || code != 0 || o.frame.Stdout != testArgs {
				t.Fatalf("exit %d/%d frame %+v", o.code, code, o.frame)
			}
		})
	}
}

// socketPath is a socket path of the test's own, short enough for a Unix socket.
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "link")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "signer.sock")
}

// run starts the signer, then the body side (the kubelet's order), calls during (when not
// nil) once the body side runs, waits for both and decodes the signer's frame.
func (p *pair) run(during func(body *os.Process)) (signer outcome, bodyCode int) {
	t := p.signer.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc := p.signer.command(ctx)
	var sout, serr bytes.Buffer
	sc.Stdout, sc.Stderr = &sout, &serr
	if err := sc.Start(); err != nil {
		t.Fatal(err)
	}
	bc := p.body.command(ctx)
	if err := bc.Start(); err != nil {
		t.Fatal(err)
	}
	if during != nil {
		during(bc.Process)
	}
	_ = bc.Wait()
	_ = sc.Wait()
	if p.signer.stdin != nil { // warm: stdout carries the result line, for the attach stream
		o := p.signer.outcome(sc, nil, serr.Bytes())
		o.stdout = sout.Bytes()
		return o, bc.ProcessState.ExitCode()
	}
	return p.signer.outcome(sc, sout.Bytes(), serr.Bytes()), bc.ProcessState.ExitCode()
}

// The body side runs the tool with the frozen bytes on stdin and in the file; the signer's
// frame, signed with the attempt key only the signer holds, carries its output, stderr
// tail and exit code, and the body side exits with the same code.
func TestSplitRunsTheToolForTheSigner(t *testing.T) {
	p := newPair(t, `cat; printf '|'; cat "$`+podcontract.EnvArgsFile+`"; echo oops >&2; env | grep -c `+podcontract.EnvAttemptKey+`; exit 3`)
	o, bodyCode := p.run(nil)
	if o.code != 3 || bodyCode != 3 || o.frame.ExitCode != 3 {
		t.Fatalf("signer exit %d, body side exit %d, frame %+v", o.code, bodyCode, o.frame)
	}
	if want := testArgs + "|" + testArgs + "0\n"; o.frame.Stdout != want {
		t.Fatalf("stdout %q, want %q", o.frame.Stdout, want)
	}
	if o.frame.StderrTail != "oops\n" || !strings.Contains(string(o.stderr), "oops") {
		t.Fatalf("stderr tail %q, signer's log %q", o.frame.StderrTail, o.stderr)
	}
}

// A cold attempt's trace context is the signer's to hand over: the body gets it as
// TRACEPARENT though its own container's environment has none.
func TestSplitTraceparentReachesTheBody(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	p := newPair(t, `printf '%s' "$`+podcontract.EnvTraceparent+`"`)
	p.signer.env[podcontract.EnvTraceparent] = tp
	if o, _ := p.run(nil); o.frame.Stdout != tp {
		t.Fatalf("the body got TRACEPARENT %q, want %q", o.frame.Stdout, tp)
	}
}

// Redaction is the signer's: the body side streams raw output, the signer redacts it before
// it keeps, counts or logs anything.
func TestSplitSignerRedacts(t *testing.T) {
	p := newPair(t, `echo "token=$API_TOKEN"; echo "$API_TOKEN" >&2`)
	p.signer.env[podcontract.EnvSecretEnv] = "API_TOKEN"
	p.signer.env["API_TOKEN"] = "s3cr3t-value-123"
	p.body.env["API_TOKEN"] = "s3cr3t-value-123"
	o, _ := p.run(nil)
	if o.frame.Stdout != "token=[REDACTED]\n" || o.frame.Redactions != 2 || strings.Contains(string(o.stderr), "s3cr3t") {
		t.Fatalf("frame %+v, signer log %q", o.frame, o.stderr)
	}
}

// A body side that goes away without saying how the tool ended (killed: the OOM killer,
// or a body that can signal its PID 1 under some runtime) yields a signed BodyLost frame,
// never a success, whatever the tool had printed.
func TestSplitBodySideKilledIsBodyLost(t *testing.T) {
	p := newPair(t, `echo '{"ok":true}'; echo printed > "$MARK"; exec sleep 30`)
	mark := filepath.Join(p.body.dir, "printed")
	if err := syscall.Mkfifo(mark, 0o600); err != nil {
		t.Fatal(err)
	}
	p.body.env["MARK"] = mark
	o, _ := p.run(func(body *os.Process) {
		// The tool has printed once it writes to the FIFO: reading it waits for that.
		if b, err := os.ReadFile(mark); err != nil || string(b) != "printed\n" {
			t.Errorf("the tool's mark: %q %v", b, err)
		}
		_ = body.Signal(syscall.SIGKILL)
	})
	if o.frame.Reason != frame.ReasonBodyLost || o.code != frame.ExitRunnerError || o.frame.Stdout != "" {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
}

// The signer refuses arguments that are not the frozen ones before anything runs: the body
// side is told to run nothing and ends too.
func TestSplitRefusalRunsNothing(t *testing.T) {
	p := newPair(t, `touch "$MARK"`)
	mark := filepath.Join(p.body.dir, "ran")
	p.body.env["MARK"] = mark
	p.signer.env[podcontract.EnvArgsDigest] = frame.DigestOf([]byte(`{"other":1}`))
	o, bodyCode := p.run(nil)
	if o.frame.Reason != frame.ReasonArgumentsDigestMismatch || bodyCode != frame.ExitRunnerError {
		t.Fatalf("frame %+v, body side exit %d", o.frame, bodyCode)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the tool ran")
	}
}

// A signer whose body side never comes reports BodyLost when the kubelet stops it.
func TestSplitBodyNeverCame(t *testing.T) {
	in := newInvocation(t, podcontract.SignFlag)
	in.env[podcontract.EnvSignerSocket], in.env[podcontract.EnvSignerAbstract] = socketPath(t), abstractName(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, stderr := startListening(t, in.command(ctx))
	_ = cmd.Process.Signal(syscall.SIGTERM)
	serr := stderr()
	_ = cmd.Wait()
	o := in.outcome(cmd, nil, serr)
	if o.frame.Reason != frame.ReasonBodyLost || o.frame.Error != errBodyNeverCame.Error() {
		t.Fatalf("frame %+v", o.frame)
	}
}

// Whatever speaks for the body side is bounded: a chunk over the bound, or a message of a
// type the body side may not send, ends the link as BodyLost, not a success.
func TestSplitSignerBoundsTheLink(t *testing.T) {
	for name, send := range map[string]func(*linkWriter){
		"chunk over the bound": func(l *linkWriter) { _ = l.send(linkStdout, make([]byte, maxLinkChunk+1)) },
		"start from the body":  func(l *linkWriter) { _ = l.sendJSON(linkStart, linkStartMsg{Run: true}) },
		"malformed end":        func(l *linkWriter) { _ = l.send(linkEnd, []byte("{")) },
	} {
		t.Run(name, func(t *testing.T) {
			in, cmd, stderr, conn, _ := signerWithFakeBody(t, nil)
			send(&linkWriter{w: conn})
			serr := stderr()
			_ = cmd.Wait()
			conn.Close()
			o := in.outcome(cmd, nil, serr)
			if o.frame.Reason != frame.ReasonBodyLost || o.frame.ExitCode == 0 {
				t.Fatalf("frame %+v", o.frame)
			}
		})
	}
}

// A warm signer takes its Handover on stdin, then the body side runs it: the Pod held no
// key before the Handover brought one.
func TestSplitWarm(t *testing.T) {
	p := newPair(t, `cat`)
	warmEnv(p.signer)
	h := authenticated(frame.Handover{Arguments: []byte(testArgs), ArgumentsDigest: frame.DigestOf([]byte(testArgs))}, testKey)
	p.signer.stdin = handoverLine(t, h)
	o, bodyCode := p.run(nil)
	if o.code != 0 || bodyCode != 0 || o.frame.Stdout != testArgs {
		t.Fatalf("exit %d/%d frame %+v", o.code, bodyCode, o.frame)
	}
	if line, ok := frame.LastResultLine(o.stdout); !ok || line != string(o.term) {
		t.Fatalf("no result line for the attach stream: %q", o.stdout)
	}
}

// startListening starts a signer and returns once it says it listens (its own log line, read
// from its stderr), and a function that returns all its stderr once it has closed it (call
// it before cmd.Wait).
func startListening(t *testing.T, cmd *exec.Cmd) (*exec.Cmd, func() []byte) {
	t.Helper()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var head bytes.Buffer
	lines := bufio.NewReader(pipe)
	for !strings.Contains(head.String(), "listening for the tool's side") {
		line, err := lines.ReadString('\n')
		head.WriteString(line)
		if err != nil {
			t.Fatalf("the signer ended before it listened: %q", head.String())
		}
	}
	return cmd, func() []byte {
		rest, _ := io.ReadAll(lines)
		return append(head.Bytes(), rest...)
	}
}

// signerWithFakeBody starts a signer (with env added to its own) and connects to it as its
// body side would; it returns once the signer's start message has been read.
func signerWithFakeBody(t *testing.T, env map[string]string) (*invocation, *exec.Cmd, func() []byte, net.Conn, linkStartMsg) {
	t.Helper()
	in := newInvocation(t, podcontract.SignFlag)
	addr := socketPath(t)
	in.env[podcontract.EnvSignerSocket], in.env[podcontract.EnvSignerAbstract] = addr, abstractName(t)
	for k, v := range env {
		in.env[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd, stderr := startListening(t, in.command(ctx))
	conn, err := net.Dial("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	start, err := readStart(bufio.NewReader(conn))
	if err != nil {
		t.Fatal(err)
	}
	return in, cmd, stderr, conn, start
}
