package sessionexec

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Transport carries one call's Handover line to a session Pod's signer and returns its
// reply. TLSTransport is the real one (a kept mutual-TLS connection per Pod, the choice of
// docs/reports/2026-12-06-session-transport.md); the test kit's simulated kubelet has its
// own, which plays the Pod's runner.
type Transport interface {
	// Call writes line to the Pod's signer and reads the reply up to and including its
	// result line (frame.ResultLine). Calls to one Pod run one at a time, in the order they
	// got their turn; a call waiting its turn gives up when ctx ends.
	Call(ctx context.Context, pod *corev1.Pod, line []byte) (Reply, error)
	// Forget closes and drops whatever the transport holds for the Pod.
	Forget(pod types.UID)
}

// Reply is what a Transport saw of one call.
type Reply struct {
	// HandedOver is when the whole Handover line was written (zero: it was not, so the
	// runner never read a whole line and the body did not run).
	HandedOver time.Time
	// Bytes are the reply as read: a log block, if any, then the result line.
	Bytes []byte
}

// maxReply bounds a reply: the largest log block a frame may point to (the output limit's
// worst case, base64) with room to spare.
const maxReply = 64 << 20

// dialRetry is how often a Pod whose signer does not listen yet is dialled again.
const dialRetry = 25 * time.Millisecond

// TLSTransport reaches session Pods directly: TCP to the Pod's address on
// podcontract.SessionPort, TLS 1.3 with the operator's client certificate, the Pod's
// certificate verified for its own name (serverName). One connection per Pod, kept between
// calls and dialled again when it broke.
type TLSTransport struct {
	config func(namespace, pod string) *tls.Config
	port   int // podcontract.SessionPort; a test's runner listens elsewhere
	mu     sync.Mutex
	pods   map[types.UID]*podConn
}

type podConn struct {
	turn chan struct{} // one call at a time
	conn net.Conn
	br   *bufio.Reader
}

// NewTLSTransport dials with the TLS configuration config gives for a Pod.
func NewTLSTransport(config func(namespace, pod string) *tls.Config) *TLSTransport {
	return &TLSTransport{config: config, port: podcontract.SessionPort, pods: map[types.UID]*podConn{}}
}

func (t *TLSTransport) podConn(uid types.UID) *podConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	pc, ok := t.pods[uid]
	if !ok {
		pc = &podConn{turn: make(chan struct{}, 1)}
		t.pods[uid] = pc
	}
	return pc
}

// Forget implements Transport.
func (t *TLSTransport) Forget(uid types.UID) {
	t.mu.Lock()
	pc, ok := t.pods[uid]
	delete(t.pods, uid)
	t.mu.Unlock()
	if ok {
		go func() { // after the call in progress, if any
			pc.turn <- struct{}{}
			pc.close()
		}()
	}
}

func (pc *podConn) close() {
	if pc.conn != nil {
		_ = pc.conn.Close()
		pc.conn, pc.br = nil, nil
	}
}

// Call implements Transport.
func (t *TLSTransport) Call(ctx context.Context, pod *corev1.Pod, line []byte) (Reply, error) {
	pc := t.podConn(pod.UID)
	select {
	case pc.turn <- struct{}{}:
	case <-ctx.Done():
		return Reply{}, ctx.Err()
	}
	defer func() { <-pc.turn }()
	if pc.conn == nil {
		if err := t.dial(ctx, pc, pod); err != nil {
			return Reply{}, err
		}
	}
	if d, ok := ctx.Deadline(); ok {
		_ = pc.conn.SetDeadline(d)
	}
	if _, err := pc.conn.Write(line); err != nil {
		pc.close()
		return Reply{}, fmt.Errorf("writing the handover to session Pod %s: %w", pod.Name, err)
	}
	reply := Reply{HandedOver: time.Now()}
	var err error
	reply.Bytes, err = readReply(pc.br)
	if err != nil {
		pc.close()
		return reply, fmt.Errorf("reading session Pod %s's reply: %w", pod.Name, err)
	}
	_ = pc.conn.SetDeadline(time.Time{})
	return reply, nil
}

// dial connects to the Pod's signer, again every dialRetry while it does not listen yet
// (refused: the container is starting), until ctx ends.
func (t *TLSTransport) dial(ctx context.Context, pc *podConn, pod *corev1.Pod) error {
	if pod.Status.PodIP == "" {
		return fmt.Errorf("session Pod %s has no address yet", pod.Name)
	}
	addr := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(t.port))
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: t.config(pod.Namespace, pod.Name)}
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			pc.conn, pc.br = c, bufio.NewReaderSize(c, 64<<10)
			return nil
		}
		var opErr *net.OpError
		if !errors.As(err, &opErr) || opErr.Op != "dial" {
			return fmt.Errorf("session Pod %s: %w", pod.Name, err) // the handshake failed: not its signer
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("session Pod %s did not listen: %w", pod.Name, err)
		case <-time.After(dialRetry):
		}
	}
}

// readReply reads lines up to and including the result line, at most maxReply bytes.
func readReply(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		line, err := br.ReadSlice('\n')
		if len(out)+len(line) > maxReply {
			return out, fmt.Errorf("the reply is over %d bytes", maxReply)
		}
		out = append(out, line...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return out, err
		}
		if _, ok := frame.LastResultLine(lastLine(out)); ok {
			return out, nil
		}
	}
}

// lastLine is the last whole line of b (with its newline and the one before it, which
// frame.ResultLine writes).
func lastLine(b []byte) []byte {
	end := len(b) - 1
	i := bytes.LastIndexByte(b[:max(end, 0)], '\n')
	return b[max(i, 0):]
}
