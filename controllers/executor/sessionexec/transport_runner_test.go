package sessionexec

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// The real transport against the real runner: cmd/runner built and started in session
// mode as a session Pod's two processes (signer and body side) on this machine, its TLS
// files issued by an authority as the executor issues them (tlsSecret), reached through
// NewTLSTransport(auth.clientConfig) at 127.0.0.1. No cluster: the kubelet's part (start
// order, environment, Secret volume) is played by runnerPod.

// runnerMaster is the frame key master of these tests (32 bytes).
var runnerMaster = []byte("0123456789abcdef0123456789abcdef")

// runnerTool is the session Pod's tool: it does what its arguments say.
const runnerTool = `a=$(cat)
case "$a" in
*daemon*) sleep 300 >/dev/null 2>&1 & echo $! > "$WS/pid"
  echo x > "$TMPDIR/left"; echo x > "$HOME/left"; echo x > "$WS/kept"; echo "started $!";;
*check*) pid=$(cat "$WS/pid"); st=$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)
  if [ -z "$st" ] || [ "$st" = Z ]; then d=dead; else d="alive($st)"; fi
  printf '%s tmp[%s] home[%s] ws[%s]' "$d" "$(ls -A "$TMPDIR")" "$(ls -A "$HOME")" "$(ls -A "$WS" | tr '\n' ' ')";;
*) printf 'echo:%s' "$a";;
esac`

var (
	runnerOnce sync.Once
	runnerExe  string
	runnerErr  error
)

// buildRunner builds cmd/runner once per test binary (skip when it cannot be built).
func buildRunner(t *testing.T) string {
	t.Helper()
	runnerOnce.Do(func() {
		root, err := filepath.Abs("../../..")
		if err != nil {
			runnerErr = err
			return
		}
		dir, err := os.MkdirTemp("", "session-runner")
		if err != nil {
			runnerErr = err
			return
		}
		runnerExe = filepath.Join(dir, "runner")
		cmd := exec.Command("go", "build", "-o", runnerExe, "./cmd/runner")
		cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			runnerErr = errors.New(err.Error() + ": " + string(out))
		}
	})
	if runnerErr != nil {
		t.Skipf("cmd/runner could not be built, so the real runner cannot be tested: %v", runnerErr)
	}
	return runnerExe
}

// runnerPod is one session Pod's runners as processes on this machine.
type runnerPod struct {
	t                  *testing.T
	pod                *corev1.Pod
	port               int
	tmp, home, ws      string
	signer, body       *exec.Cmd
	signerLog, bodyLog *syncBuffer
}

// startRunnerPod starts the signer (its TLS directory written as the executor's Secret
// would be: tls.crt and tls.key for serverName(ns, name), client-ca.crt the authority's),
// reads the port it listens on from its log, then starts the body side (the kubelet's
// order).
func startRunnerPod(t *testing.T, auth *authority, name string) *runnerPod {
	return startRunnerPodWith(t, auth, name, false)
}

// startRunnerPodWith is startRunnerPod; relay: the signer listens on a socket in the link
// directory and the body side relays the operator's TCP connections to it (a Pod under a
// RuntimeClass).
func startRunnerPodWith(t *testing.T, auth *authority, name string, relay bool) *runnerPod {
	t.Helper()
	exe := buildRunner(t)
	p := &runnerPod{t: t, pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name,
		UID: types.UID("uid-" + name)}, Status: corev1.PodStatus{PodIP: "127.0.0.1"}}}
	dir := t.TempDir()
	mk := func(n string) string {
		d := filepath.Join(dir, n)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	tlsDir, sigDir := mk("tls"), mk("signer")
	p.tmp, p.home, p.ws = mk("tmp"), mk("home"), mk("workspace")
	cert, key, err := auth.issue(time.Now(), name, x509.ExtKeyUsageServerAuth, []string{serverName(p.pod.Namespace, name)})
	if err != nil {
		t.Fatal(err)
	}
	for f, b := range map[string][]byte{podcontract.SessionTLSCert: cert, podcontract.SessionTLSKey: key, podcontract.SessionClientCA: auth.caPEM} {
		if err := os.WriteFile(filepath.Join(tlsDir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The link: a socket file in a short directory (sun_path is 108 bytes) and an
	// abstract name of this Pod's own.
	linkDir, err := os.MkdirTemp("", "tglink")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(linkDir) })
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	link := map[string]string{
		podcontract.EnvSignerSocket:   filepath.Join(linkDir, "signer.sock"),
		podcontract.EnvSignerAbstract: "@toolgate-transport-test-" + hex.EncodeToString(rnd[:]),
	}
	if relay {
		link[podcontract.EnvSessionRelay] = filepath.Join(linkDir, "operator.sock")
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	env := func(kv map[string]string) []string {
		out := []string{"PATH=" + os.Getenv("PATH")}
		for k, v := range kv {
			out = append(out, k+"="+v)
		}
		for k, v := range link {
			out = append(out, k+"="+v)
		}
		return out
	}
	p.signer = exec.CommandContext(ctx, exe, podcontract.SignFlag)
	p.signer.Env = env(map[string]string{
		podcontract.EnvSession:         podcontract.SessionOn,
		podcontract.EnvSessionAddr:     "127.0.0.1:0",
		podcontract.EnvSessionTLSDir:   tlsDir,
		podcontract.EnvHandoverKeys:    frame.EncodePublicKeys([]ed25519.PublicKey{frame.HandoverPublicKey(runnerMaster)}),
		podcontract.EnvPodUID:          string(p.pod.UID),
		podcontract.EnvTerminationPath: filepath.Join(sigDir, "termination-log"),
		podcontract.EnvArgsFile:        filepath.Join(dir, "args", "args.json"),
	})
	stderr, err := p.signer.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.signer.Start(); err != nil {
		t.Fatal(err)
	}
	p.signerLog, p.bodyLog = &syncBuffer{}, &syncBuffer{}
	lines := bufio.NewReader(stderr)
	const said = "session: listening for the operator at "
	for listening := false; !listening; {
		line, err := lines.ReadString('\n')
		p.signerLog.write(line)
		if err != nil {
			t.Fatalf("the signer ended before it listened: %q", p.signerLog.String())
		}
		_, addr, ok := strings.Cut(line, said)
		listening = ok
		if ok && !relay {
			_, port, _ := net.SplitHostPort(strings.TrimSpace(addr))
			if p.port, err = strconv.Atoi(port); err != nil {
				t.Fatalf("the signer's address %q: %v", addr, err)
			}
		}
	}
	go func() {
		for {
			line, err := lines.ReadString('\n')
			p.signerLog.write(line)
			if err != nil {
				return
			}
		}
	}()
	p.body = exec.CommandContext(ctx, exe, podcontract.BodyFlag, "--", "/bin/sh", "-c", runnerTool)
	p.body.Env = env(map[string]string{
		podcontract.EnvSessionAddr:     "127.0.0.1:0",
		podcontract.EnvSession:         podcontract.SessionOn,
		podcontract.EnvSessionWipe:     p.tmp + "," + p.home,
		podcontract.EnvWorkspace:       p.ws,
		podcontract.EnvTerminationPath: filepath.Join(dir, "body-termination-log"),
		"HOME":                         p.home, "TMPDIR": p.tmp, "WS": p.ws,
	})
	p.body.Stderr = p.bodyLog
	if err := p.body.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.signer.Process.Kill()
		_ = p.body.Process.Kill()
		_ = p.signer.Wait()
		_ = p.body.Wait()
	})
	if relay {
		p.port = relayPort(t, p.bodyLog)
	}
	return p
}

// relayPort is the port the body side relays from, once its log says so.
func relayPort(t *testing.T, log *syncBuffer) int {
	t.Helper()
	const said = "session: relaying the operator's connections from "
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, rest, ok := strings.Cut(log.String(), said); ok {
			if addr, _, ok := strings.Cut(rest, " to "); ok {
				_, port, _ := net.SplitHostPort(addr)
				n, err := strconv.Atoi(port)
				if err != nil {
					t.Fatalf("the relay's address %q: %v", addr, err)
				}
				return n
			}
		}
		time.Sleep(10 * time.Millisecond) // polling the body's log for the line
	}
	t.Fatalf("the body side never relayed: %q", log.String())
	return 0
}

// Under a RuntimeClass the operator reaches the signer through the body side's relay: the
// calls verify as they do direct (the mutual TLS ends at the signer), and a client without
// the operator's certificate is refused through the relay too.
func TestTLSTransportThroughTheBodysRelay(t *testing.T) {
	auth, err := newAuthority(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := startRunnerPodWith(t, auth, "toolgate-session-relay", true)
	tr := p.transport(auth)
	for i, args := range []string{`{"op":"echo","n":1}`, `{"op":"echo","n":2}`} {
		f := p.call(tr, fmt.Sprintf("call-relay-%d", i), args)
		if f.ExitCode != 0 {
			t.Fatalf("call %d through the relay: %+v (signer %q, body %q)", i, f, p.signerLog.String(), p.bodyLog.String())
		}
	}
	rogue, err := newAuthority(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	conf := rogue.clientConfig(p.pod.Namespace, p.pod.Name)
	conf.InsecureSkipVerify = true
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)), conf)
	if err == nil {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		_ = c.Close()
	}
	if err == nil {
		t.Fatal("a client of another CA got through the relay")
	}
}

// handover is attempt 1 of callUID with args, signed for podUID.
func runnerHandover(t *testing.T, callUID, args, podUID string) []byte {
	t.Helper()
	h := frame.Handover{CallUID: callUID, Attempt: 1, AttemptKey: frame.AttemptKey(runnerMaster, callUID, 1),
		Arguments: []byte(args), ArgumentsDigest: frame.DigestOf([]byte(args)), DeadlineMs: 30_000}
	line, err := frame.EncodeHandover(frame.SignHandover([][]byte{runnerMaster}, podUID, h))
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// call hands callUID over through tr and returns the frame, which must verify with that
// call attempt's key.
func (p *runnerPod) call(tr *TLSTransport, callUID, args string) frame.Frame {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reply, err := tr.Call(ctx, p.pod, runnerHandover(p.t, callUID, args, string(p.pod.UID)))
	if err != nil {
		p.t.Fatalf("%s: %v (signer log %q)", callUID, err, p.signerLog.String())
	}
	if reply.HandedOver.IsZero() {
		p.t.Fatalf("%s: a reply without a handover time", callUID)
	}
	msg, ok := frame.LastResultLine(reply.Bytes)
	if !ok {
		p.t.Fatalf("%s: no result line in %q", callUID, reply.Bytes)
	}
	f, _, err := frame.Decoder{Keys: [][]byte{frame.AttemptKey(runnerMaster, callUID, 1)}}.DecodeTermination(msg)
	if err != nil {
		p.t.Fatalf("%s: the reply does not verify with its attempt's key: %v (%.200q)", callUID, err, msg)
	}
	return f
}

// wait waits for both processes to end on their own and returns the signer's exit code.
func (p *runnerPod) wait() int {
	p.t.Helper()
	_ = p.signer.Wait()
	_ = p.body.Wait()
	return p.signer.ProcessState.ExitCode()
}

func (p *runnerPod) transport(auth *authority) *TLSTransport {
	tr := NewTLSTransport(auth.clientConfig)
	tr.port = p.port
	p.t.Cleanup(func() { tr.Forget(p.pod.UID) })
	return tr
}

// conn is the connection tr keeps for the Pod (nil: none).
func (tr *TLSTransport) connOf(uid types.UID) net.Conn {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if pc := tr.pods[uid]; pc != nil {
		return pc.conn
	}
	return nil
}

// Calls of one session, one after another on the one connection the transport keeps:
// each reply verifies with its own attempt's key and carries that call's output; what a
// call left (a daemon, files in $TMPDIR and $HOME) is gone before the next runs, the
// workspace stays; connections without the operator's certificate, and a Pod certificate
// for another Pod's name, are refused — and the kept connection still serves after them.
func TestTLSTransportDrivesTheRunner(t *testing.T) {
	auth, err := newAuthority(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := startRunnerPod(t, auth, "toolgate-session-one")
	tr := p.transport(auth)

	// (a), (b): three calls on one kept connection.
	f1 := p.call(tr, "call-1", `{"op":"daemon"}`)
	first := tr.connOf(p.pod.UID)
	pid, ok := strings.CutPrefix(f1.Stdout, "started ")
	if !ok || f1.ExitCode != 0 || first == nil {
		t.Fatalf("call 1: %+v (connection %v)", f1, first)
	}
	f2 := p.call(tr, "call-2", `{"op":"check"}`)
	if f2.Stdout != "dead tmp[] home[] ws[kept pid ]" {
		t.Fatalf("call 2 saw call 1's leftovers (daemon pid %s): %q", pid, f2.Stdout)
	}
	f3 := p.call(tr, "call-3", `{"op":"echo","n":3}`)
	if f3.Stdout != `echo:{"op":"echo","n":3}` || f3.ArgsDigest != frame.DigestOf([]byte(`{"op":"echo","n":3}`)) {
		t.Fatalf("call 3: %+v", f3)
	}
	if c := tr.connOf(p.pod.UID); c != first {
		t.Fatal("the transport dialled again between calls: the connection was not kept")
	}
	// One call's key verifies no other call's frame.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reply, err := tr.Call(ctx, p.pod, runnerHandover(t, "call-4", `{"op":"echo","n":4}`, string(p.pod.UID)))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := frame.LastResultLine(reply.Bytes)
	if _, _, err := (frame.Decoder{Keys: [][]byte{frame.AttemptKey(runnerMaster, "call-3", 1)}}).DecodeTermination(msg); !errors.Is(err, frame.ErrSignature) {
		t.Fatalf("call 3's key on call 4's frame: %v", err)
	}

	// (d): no client certificate, or one of another authority: the handshake is refused
	// (TLS 1.3: the client learns it on its first read, from the server's alert).
	rogue, err := newAuthority(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port))
	for name, certs := range map[string][]tls.Certificate{"no client certificate": nil, "another authority's": {*rogue.client}} {
		conf := auth.clientConfig(p.pod.Namespace, p.pod.Name)
		conf.Certificates, conf.GetClientCertificate = certs, nil
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, conf)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err = c.Write(runnerHandover(t, "call-rogue", `{"op":"echo"}`, string(p.pod.UID))); err == nil {
				_, err = c.Read(make([]byte, 1))
			}
			_ = c.Close()
		}
		var netErr net.Error
		if err == nil || errors.As(err, &netErr) && netErr.Timeout() {
			t.Fatalf("%s: not refused (%v)", name, err)
		}
		if !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("%s: refused, but not for its certificate: %v", name, err)
		}
	}

	// (e): the Pod's certificate is for its own name only: dialled as another Pod's, the
	// operator's verification fails before anything is written.
	other := NewTLSTransport(func(ns, _ string) *tls.Config { return auth.clientConfig(ns, "other-pod") })
	other.port = p.port
	otherPod := p.pod.DeepCopy()
	otherPod.UID = "uid-other-pod"
	reply, err = other.Call(ctx, otherPod, runnerHandover(t, "call-other", `{"op":"echo"}`, string(p.pod.UID)))
	var hostErr x509.HostnameError
	if !errors.As(err, &hostErr) || !reply.HandedOver.IsZero() {
		t.Fatalf("dialled for another Pod's name: %v (handed over %v)", err, reply.HandedOver)
	}

	// None of those displaced the operator's connection or ended the session.
	if f := p.call(tr, "call-5", `{"op":"echo","n":5}`); f.Stdout != `echo:{"op":"echo","n":5}` {
		t.Fatalf("call 5: %+v", f)
	}
	if c := tr.connOf(p.pod.UID); c != first {
		t.Fatal("the refused connections displaced the operator's")
	}
	if log := p.signerLog.String(); !strings.Contains(log, "session: refused a connection") {
		t.Errorf("the signer did not log the refused connections: %q", log)
	}
}

// (c) A Handover signed for another Pod's uid is refused: an unsigned HandoverRefused
// reply, nothing run, and the session ends (the signer exits 125 so that the Pod is
// replaced).
func TestTLSTransportHandoverForAnotherPodIsRefused(t *testing.T) {
	auth, err := newAuthority(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p := startRunnerPod(t, auth, "toolgate-session-two")
	tr := p.transport(auth)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reply, err := tr.Call(ctx, p.pod, runnerHandover(t, "call-x", `{"op":"daemon"}`, "uid-of-another-pod"))
	if err != nil {
		t.Fatalf("%v (signer log %q)", err, p.signerLog.String())
	}
	msg, ok := frame.LastResultLine(reply.Bytes)
	if !ok {
		t.Fatalf("no result line in %q", reply.Bytes)
	}
	if _, _, err := (frame.Decoder{Keys: [][]byte{frame.AttemptKey(runnerMaster, "call-x", 1), runnerMaster}}).DecodeTermination(msg); !errors.Is(err, frame.ErrUnsigned) {
		t.Fatalf("the refusal is not unsigned: %v", err)
	}
	var f frame.Frame
	if err := json.Unmarshal([]byte(msg), &f); err != nil {
		t.Fatalf("unsigned frame %.200q: %v", msg, err)
	}
	if f.Reason != frame.ReasonHandoverRefused || f.Stdout != "" {
		t.Fatalf("reply %+v", f)
	}
	if code := p.wait(); code != frame.ExitRunnerError {
		t.Fatalf("signer exit %d after a refused Handover, want %d (log %q)", code, frame.ExitRunnerError, p.signerLog.String())
	}
	if entries, err := os.ReadDir(p.ws); err != nil || len(entries) != 0 {
		t.Fatalf("the refused call ran: workspace %v %v", entries, err)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) write(str string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(str)
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.write(string(p))
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
