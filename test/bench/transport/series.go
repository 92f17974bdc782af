package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// target is one runtime's Pod and the bench's kept-alive connections to it.
type target struct {
	rt, pod, ip string
	tcp         *lineConn
	tls         *lineConn
}

type lineConn struct {
	c net.Conn
	r *bufio.Reader
}

// sample is one round trip: d to the response line; parts (from the call's start) when the
// stream was connected (first stdin read / TCP connect / TLS handshake done) and when it
// ended (exec: process gone; attach: stream torn down after the response); stale are
// output lines of other requests seen on the stream.
type sample struct {
	d     time.Duration
	parts map[string]time.Duration
	stale int
	err   error
}

type bench struct {
	o   options
	cfg *rest.Config
	cs  kubernetes.Interface
	cr  creds
}

func macOf(key []byte, id string, seq int, args []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s\n%d\n", id, seq)
	m.Write(args)
	return hex.EncodeToString(m.Sum(nil))
}

// request is a ~200-byte handover stand-in with a fresh id and its HMAC.
func (b *bench) request(seq int) (string, []byte) {
	var r [8]byte
	_, _ = rand.Read(r[:])
	id := hex.EncodeToString(r[:])
	args := json.RawMessage(`{"message":"hi","deadline":"2026-12-06T09:00:00Z","scope":"demo","session":"s-1"}`)
	line, _ := json.Marshal(map[string]any{"id": id, "seq": seq, "tool": "echo", "args": args,
		"mac": macOf(b.cr.key, id, seq, args)})
	return id, append(line, '\n')
}

// lineWatch is the stdout of an attach/exec stream: it splits lines and signals the first
// that carries want (a request id; "" takes the first line).
type lineWatch struct {
	mu    sync.Mutex
	want  string
	buf   []byte
	got   []byte
	stale int
	at    time.Time
	done  chan struct{}
}

func newLineWatch(want string) *lineWatch { return &lineWatch{want: want, done: make(chan struct{})} }

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := w.buf[:i]
		w.buf = w.buf[i+1:]
		if w.got != nil {
			continue
		}
		if w.want == "" || bytes.Contains(line, []byte(`"id":"`+w.want+`"`)) {
			w.got, w.at = append([]byte(nil), line...), time.Now()
			close(w.done)
		} else {
			w.stale++
		}
	}
}

// holdReader yields the request, then blocks until release is closed (attach: stdin stays
// open until the response is in) or returns EOF at once (exec: the client reads one line).
type holdReader struct {
	mu      sync.Mutex
	r       io.Reader
	first   time.Time
	release <-chan struct{}
}

func (h *holdReader) Read(p []byte) (int, error) {
	h.mu.Lock()
	if h.first.IsZero() {
		h.first = time.Now()
	}
	h.mu.Unlock()
	n, err := h.r.Read(p)
	if errors.Is(err, io.EOF) && h.release != nil {
		if n > 0 {
			return n, nil
		}
		<-h.release
	}
	return n, err
}

func (h *holdReader) firstAt() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.first
}

func (b *bench) executor(sub, proto, pod string, cmd []string, stdin bool) (remotecommand.Executor, error) {
	req := b.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(b.o.ns).Name(pod).SubResource(sub)
	if sub == "attach" {
		req = req.VersionedParams(&corev1.PodAttachOptions{Container: "runner", Stdin: stdin, Stdout: true}, scheme.ParameterCodec)
	} else {
		req = req.VersionedParams(&corev1.PodExecOptions{Container: "runner", Command: cmd, Stdin: stdin, Stdout: true, Stderr: true},
			scheme.ParameterCodec)
	}
	if proto == "ws" {
		return remotecommand.NewWebSocketExecutor(b.cfg, "GET", req.URL().String())
	}
	return remotecommand.NewSPDYExecutor(b.cfg, "POST", req.URL())
}

// stream runs one attach or exec round trip; cmd nil is attach.
func (b *bench) stream(ctx context.Context, t *target, sub, proto string, cmd []string, seq int) sample {
	start := time.Now()
	id, line := b.request(seq)
	withStdin := sub == "attach" || len(cmd) > 1 && cmd[1] == "client"
	want := id
	if !withStdin {
		want = "" // bare exec: its fixed line
	}
	ex, err := b.executor(sub, proto, t.pod, cmd, withStdin)
	if err != nil {
		return sample{err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, b.o.timeout)
	defer cancel()
	w := newLineWatch(want)
	var stderr bytes.Buffer
	opts := remotecommand.StreamOptions{Stdout: w}
	var in *holdReader
	if withStdin {
		in = &holdReader{r: bytes.NewReader(line)}
		if sub == "attach" {
			in.release = w.done
		}
		opts.Stdin = in
	}
	if sub == "exec" {
		opts.Stderr = &stderr
	}
	ended := make(chan error, 1)
	go func() { ended <- ex.StreamWithContext(ctx, opts) }()
	s := sample{parts: map[string]time.Duration{}}
	var streamErr error
	endSeen := false
	select {
	case <-w.done:
		s.d = w.at.Sub(start)
	case streamErr = <-ended:
		endSeen = true
		// exec's stream can end before the watch is read; the line may be in.
		select {
		case <-w.done:
			s.d = w.at.Sub(start)
		default:
			if streamErr == nil {
				streamErr = errors.New("stream closed")
			}
			return sample{err: fmt.Errorf("%s ended without a response: %w %s", sub, streamErr, strings.TrimSpace(stderr.String()))}
		}
	case <-ctx.Done():
		return sample{err: fmt.Errorf("%s: no response in %s (stale lines %d)", sub, b.o.timeout, w.stale)}
	}
	if sub == "attach" {
		cancel() // attach never ends by itself: the container runs on
	}
	if !endSeen {
		streamErr = <-ended
	}
	s.parts["end"] = time.Since(start)
	if in != nil && !in.firstAt().IsZero() {
		s.parts["connected"] = in.firstAt().Sub(start)
	}
	if sub == "exec" && streamErr != nil {
		return sample{err: fmt.Errorf("exec: %w (%s)", streamErr, strings.TrimSpace(stderr.String()))}
	}
	s.stale = w.stale
	if err := check(w.got); err != nil {
		s.err = err
	}
	return s
}

func check(line []byte) error {
	var r struct {
		Exit  int    `json:"exit"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("response %q: %w", line, err)
	}
	if r.Exit != 0 {
		return fmt.Errorf("responder: exit %d: %s", r.Exit, r.Error)
	}
	return nil
}

// direct is one round trip on a TCP connection to the Pod; keep reuses (and on error
// redials) the target's connection; tlsOn uses mutual TLS on :8443.
func (b *bench) direct(t *target, keep, tlsOn bool, seq int) sample {
	start := time.Now()
	id, line := b.request(seq)
	s := sample{parts: map[string]time.Duration{}}
	slot := &t.tcp
	if tlsOn {
		slot = &t.tls
	}
	lc := *slot
	if lc == nil || !keep {
		d := net.Dialer{Timeout: b.o.timeout}
		var c net.Conn
		var err error
		if tlsOn {
			td := tls.Dialer{NetDialer: &d, Config: b.cr.client}
			c, err = td.Dial("tcp", net.JoinHostPort(t.ip, "8443")) // handshake included
		} else {
			c, err = d.Dial("tcp", net.JoinHostPort(t.ip, "8080"))
		}
		if err != nil {
			return sample{err: err}
		}
		s.parts["connected"] = time.Since(start)
		lc = &lineConn{c: c, r: bufio.NewReader(c)}
		if keep {
			*slot = lc
		}
	}
	fail := func(err error) sample {
		_ = lc.c.Close()
		if keep {
			*slot = nil
		}
		return sample{err: err}
	}
	_ = lc.c.SetDeadline(time.Now().Add(b.o.timeout))
	if _, err := lc.c.Write(line); err != nil {
		return fail(err)
	}
	resp, err := lc.r.ReadBytes('\n')
	if err != nil {
		return fail(err)
	}
	s.d = time.Since(start)
	if !keep {
		_ = lc.c.Close()
		s.parts["end"] = time.Since(start)
	}
	if !bytes.Contains(resp, []byte(`"id":"`+id+`"`)) {
		return fail(fmt.Errorf("response of another request: %q", resp))
	}
	if err := check(bytes.TrimSpace(resp)); err != nil {
		return fail(err)
	}
	return s
}

// seriesDef: a name, its -help text and its round trip.
type seriesDef struct {
	name, help string
	run        func(b *bench, ctx context.Context, t *target, seq int) sample
}

var allSeries = []seriesDef{
	{"attach-ws", "new pods/attach per call (WebSocket executor): write the request line to PID 1's stdin, read its response line (matched by request id) from the shared stdout, tear the stream down",
		func(b *bench, ctx context.Context, t *target, seq int) sample {
			return b.stream(ctx, t, "attach", "ws", nil, seq)
		}},
	{"attach-spdy", "the same over the SPDY executor",
		func(b *bench, ctx context.Context, t *target, seq int) sample {
			return b.stream(ctx, t, "attach", "spdy", nil, seq)
		}},
	{"exec-ws", "new pods/exec per call (WebSocket) of '/responder client': the request on its stdin, forwarded to PID 1 over a Unix socket, the response on its stdout (process start included); until the response line",
		func(b *bench, ctx context.Context, t *target, seq int) sample {
			return b.stream(ctx, t, "exec", "ws", []string{"/responder", "client"}, seq)
		}},
	{"exec-spdy", "the same over SPDY",
		func(b *bench, ctx context.Context, t *target, seq int) sample {
			return b.stream(ctx, t, "exec", "spdy", []string{"/responder", "client"}, seq)
		}},
	{"bare-ws", "bare exec (WebSocket): '/responder echo' prints a fixed response line, no stdin, no runner: what Kubernetes charges for one command in a running container",
		func(b *bench, ctx context.Context, t *target, seq int) sample {
			return b.stream(ctx, t, "exec", "ws", []string{"/responder", "echo"}, seq)
		}},
	{"bare-spdy", "the same over SPDY",
		func(b *bench, ctx context.Context, t *target, seq int) sample {
			return b.stream(ctx, t, "exec", "spdy", []string{"/responder", "echo"}, seq)
		}},
	{"tcp-new", "direct: a new TCP connection to PodIP:8080 per call (from the host, via the cluster bridge), one request line, one response line, close",
		func(b *bench, _ context.Context, t *target, seq int) sample { return b.direct(t, false, false, seq) }},
	{"tcp-keep", "direct: one kept-alive TCP connection to PodIP:8080, reused by every call",
		func(b *bench, _ context.Context, t *target, seq int) sample { return b.direct(t, true, false, seq) }},
	{"tls-new", "direct: a new mutual-TLS 1.3 connection to PodIP:8443 per call (full handshake, ECDSA P-256, no resumption)",
		func(b *bench, _ context.Context, t *target, seq int) sample { return b.direct(t, false, true, seq) }},
	{"tls-keep", "direct: one kept-alive mutual-TLS connection, reused by every call",
		func(b *bench, _ context.Context, t *target, seq int) sample { return b.direct(t, true, true, seq) }},
}
