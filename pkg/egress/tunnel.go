package egress

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultFirstMessageTimeout is Config.FirstMessageTimeout's default: how long a tunnel's
// client has, from the tunnel's opening, to send its first message complete.
const DefaultFirstMessageTimeout = 10 * time.Second

// maxFirstMessage bounds what the proxy holds of a tunnel's first message (a TLS ClientHello
// fits in one 16 KiB record), and of each request head in a plain-HTTP tunnel.
const maxFirstMessage = 32 << 10

// maxFirstLine bounds the first line the proxy reads to tell HTTP from other text protocols
// (a common server limit on a request line).
const maxFirstLine = 8 << 10

var (
	errTunnelRefused = errors.New("egress proxy: tunnel refused")
	errTooLarge      = errors.New("egress proxy: first message too large")
)

// tunnelConn is a CONNECT tunnel's connection to its destination as goproxy holds it. What
// the client sends goes through a pipe to forward, which checks the tunnel's first message
// (and every request of a plain-HTTP tunnel) before any byte reaches the destination; what
// the destination sends goes straight back (the embedded connection's reads). It is made
// before the dial, so that the end of its grant can close it whenever that comes.
type tunnelConn struct {
	*net.TCPConn // the destination, set by start
	p            *proxy
	g            Grant
	host         string // the normalised name the CONNECT asked for
	port         int32
	pr           *io.PipeReader
	pw           *io.PipeWriter
	decided      atomic.Bool // the first message was settled (passed, refused or timed out)

	mu      sync.Mutex // guards what follows against End and the timers
	closed  bool
	timers  []*time.Timer
	release func() // gives the tunnel's slot back
}

// start takes over the dialled destination and begins checking: the first-message timer,
// a timer at the grant's expiry (a tunnel never outlives its grant), and forward.
func (t *tunnelConn) start(dest *net.TCPConn) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed { // the grant ended during the dial
		_ = dest.Close()
		return errTunnelRefused
	}
	t.TCPConn = dest
	t.pr, t.pw = io.Pipe()
	// Verify accepts a grant through the second Expires names; the tunnel ends after it.
	left := time.Unix(t.g.Expires+1, 0).Sub(t.p.cfg.Now())
	t.timers = append(t.timers, time.AfterFunc(t.p.cfg.FirstMessageTimeout, t.timeout), time.AfterFunc(left, func() { _ = t.Close() }))
	go t.forward()
	return nil
}

func (t *tunnelConn) setRelease(release func()) { t.release = release }

// Write and ReadFrom take what the client sends (goproxy copies into the tunnel with either).
func (t *tunnelConn) Write(b []byte) (int, error) { return t.pw.Write(b) }

func (t *tunnelConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(t.pw, r) }

// CloseWrite tells forward that the client is done; forward half-closes the destination
// once it has passed everything on.
func (t *tunnelConn) CloseWrite() error { return t.pw.Close() }

// Close ends the tunnel both ways and gives its slot back; goproxy closes the client's side
// when its copy from the destination fails.
func (t *tunnelConn) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	t.release()
	for _, tm := range t.timers {
		tm.Stop()
	}
	if t.TCPConn == nil {
		return nil
	}
	t.pr.CloseWithError(net.ErrClosed)
	return t.TCPConn.Close()
}

// settle decides the first message once, noting a refusal's reason on the record; false
// when it was decided already (the timer and forward race for it).
func (t *tunnelConn) settle(refusal string) bool {
	if !t.decided.CompareAndSwap(false, true) {
		return false
	}
	if refusal != "" {
		t.p.note(t.g, t.host, t.port, refusal)
	}
	return true
}

// timeout refuses a tunnel whose first message is not complete in time.
func (t *tunnelConn) timeout() {
	if t.settle(RefusedFirstTimeout) {
		_ = t.Close()
	}
}

// refuse ends the tunnel for a refused message: the first message's refusal is noted by
// settle (unless the timer was first), a later request's here.
func (t *tunnelConn) refuse(first bool, refusal string) error {
	if first {
		t.settle(refusal)
	} else {
		t.p.note(t.g, t.host, t.port, refusal)
	}
	return errTunnelRefused
}

// forward passes the client's bytes to the destination once their first message is
// checked: a TLS ClientHello must name the tunnel's host; each request of plain HTTP must
// too; anything else passes unread.
func (t *tunnelConn) forward() {
	if err := t.forwardChecked(); err != nil {
		_ = t.Close()
		return
	}
	_ = t.TCPConn.CloseWrite()
}

func (t *tunnelConn) forwardChecked() error {
	in := &firstBytes{r: t.pr, limit: maxFirstMessage, keep: true}
	br := bufio.NewReaderSize(in, maxFirstLine)
	kind, err := sniff(br)
	if kind == tlsMessage {
		var hello *tls.ClientHelloInfo
		if hello, err = readClientHello(br); err == nil {
			if refusal := t.helloRefusal(hello); refusal != "" {
				return t.refuse(true, refusal)
			}
		}
	}
	switch {
	case gone(err):
		t.settle("") // the client went away before its first message was complete
		return err
	case err != nil:
		return t.refuse(true, RefusedBadRequest)
	case kind == httpMessage:
		in.keep, in.kept = false, nil // requests are written again, never replayed
		return t.relayHTTP(br, in)
	}
	if !t.settle("") {
		return errTunnelRefused
	}
	if _, err := t.TCPConn.Write(in.kept); err != nil {
		return err
	}
	in.keep, in.kept = false, nil
	_, err = io.Copy(t.TCPConn, t.pr)
	return err
}

// firstBytes reads the client's side of a tunnel: it keeps what it read while the first
// message is checked (to replay it) and reads no more than limit until the check lifts it.
type firstBytes struct {
	r     io.Reader
	keep  bool
	kept  []byte
	limit int // bytes left to read; negative: no limit
}

func (f *firstBytes) Read(b []byte) (int, error) {
	if f.limit == 0 {
		return 0, errTooLarge
	}
	if f.limit > 0 && len(b) > f.limit {
		b = b[:f.limit]
	}
	n, err := f.r.Read(b)
	if f.limit > 0 {
		f.limit -= n
	}
	if f.keep {
		f.kept = append(f.kept, b[:n]...)
	}
	return n, err
}
