package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"time"

	"github.com/elazarl/goproxy"
)

const (
	// interceptIdle closes a terminated tunnel's client connection after this long between
	// requests.
	interceptIdle = 2 * time.Minute
	// maxInterceptHeader bounds a request head in a terminated tunnel.
	maxInterceptHeader = 64 << 10
)

var errRefusedHello = errors.New("egress proxy: ClientHello refused")

// intercept accepts a CONNECT to a destination with an injection: the proxy terminates the
// tunnel's TLS with a leaf from its CA and sends each request on to the real host over TLS
// of its own, with the injected headers set. Without a CA it refuses (InjectionUnavailable).
func (p *proxy) intercept(g Grant, hostport string, inject []Injection, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	host, port := refusedHost(hostport, 443)
	if p.cfg.CA == nil {
		p.note(g, host, port, RefusedInjectionUnavailable)
		ctx.Resp = refuse(ctx.Req, http.StatusForbidden, RefusedInjectionUnavailable) //nolint:bodyclose // goproxy writes this response to the client and closes its body
		return goproxy.RejectConnect, hostport
	}
	it := newInterceptedTunnel(p, g, host, port, inject)
	dest, ok := p.open(g, hostport, it, ctx)
	if !ok {
		_ = it.Close()
		return goproxy.RejectConnect, hostport
	}
	it.dest = dest
	return &goproxy.ConnectAction{Action: goproxy.ConnectHijack, Hijack: func(req *http.Request, client net.Conn, _ *goproxy.ProxyCtx) {
		it.serve(req, client)
	}}, hostport
}

// interceptedTunnel is a terminated CONNECT tunnel: the client's TLS ends at the proxy, each
// request in it is checked, given its injections and sent on by a transport of its own that
// dials only the checked address and verifies the destination's certificate.
type interceptedTunnel struct {
	p      *proxy
	g      Grant
	host   string
	port   int32
	dest   string // the checked address
	inject []Injection
	ctx    context.Context // cancelled by Close: requests in flight stop
	cancel context.CancelFunc
	tr     *http.Transport
	rp     *httputil.ReverseProxy

	mu      sync.Mutex
	closed  bool
	client  net.Conn
	release func()
	expiry  *time.Timer
}

func newInterceptedTunnel(p *proxy, g Grant, host string, port int32, inject []Injection) *interceptedTunnel {
	it := &interceptedTunnel{p: p, g: g, host: host, port: port, inject: inject}
	it.ctx, it.cancel = context.WithCancel(context.Background())
	it.tr = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return p.dialChecked(ctx, "tcp", it.dest) },
		TLSClientConfig: &tls.Config{RootCAs: p.cfg.UpstreamRoots, ServerName: host, MinVersion: tls.VersionTLS12,
			NextProtos: []string{"http/1.1"}},
		TLSHandshakeTimeout: p.cfg.DialTimeout, ResponseHeaderTimeout: time.Minute,
		MaxIdleConnsPerHost: 1, IdleConnTimeout: 30 * time.Second,
	}
	it.rp = &httputil.ReverseProxy{Rewrite: it.rewrite, Transport: it.tr, FlushInterval: -1,
		ErrorLog: log.New(io.Discard, "", 0), ErrorHandler: it.upstreamError}
	// The tunnel never outlives its grant (Verify accepts it through the second Expires
	// names), even when goproxy never hands it a connection.
	it.expiry = time.AfterFunc(time.Unix(g.Expires+1, 0).Sub(p.cfg.Now()), func() { _ = it.Close() })
	return it
}

func (it *interceptedTunnel) setRelease(release func()) { it.release = release }

// Close ends the tunnel (the grant ended or expired, or the client is done): the client's
// connection, the requests in flight and the connections to the destination.
func (it *interceptedTunnel) Close() error {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.closed {
		return nil
	}
	it.closed = true
	if it.release != nil { // nil when no slot was taken
		it.release()
	}
	it.expiry.Stop()
	it.cancel()
	it.tr.CloseIdleConnections()
	if it.client != nil {
		return it.client.Close()
	}
	return nil
}

// attach hands the tunnel its client's connection; false when it was closed already.
func (it *interceptedTunnel) attach(client net.Conn) bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.client = client
	return !it.closed
}

// serve answers the CONNECT, terminates TLS (the ClientHello must name the tunnel's host,
// within FirstMessageTimeout) and serves the tunnel's HTTP/1.1 requests until it closes.
func (it *interceptedTunnel) serve(req *http.Request, client net.Conn) {
	defer func() { _ = it.Close() }()
	if !it.attach(client) {
		return
	}
	if _, err := fmt.Fprintf(client, "HTTP/%d.%d 200 Connection established\r\n\r\n", max(req.ProtoMajor, 1), req.ProtoMinor); err != nil {
		return
	}
	_ = client.SetDeadline(time.Now().Add(it.p.cfg.FirstMessageTimeout))
	var helloRefused bool
	conn := tls.Server(client, &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if helloRefusal(hello, it.host) != "" {
				helloRefused = true
				return nil, errRefusedHello
			}
			return it.p.cfg.CA.leaf(it.host)
		}})
	if err := conn.Handshake(); err != nil {
		if refusal := handshakeRefusal(err, helloRefused); refusal != "" {
			it.p.note(it.g, it.host, it.port, refusal)
		}
		return
	}
	_ = client.SetDeadline(time.Time{})
	l := &oneConnListener{conn: conn, done: make(chan struct{})}
	srv := &http.Server{Handler: it, ReadHeaderTimeout: it.p.cfg.FirstMessageTimeout, IdleTimeout: interceptIdle,
		MaxHeaderBytes: maxInterceptHeader, ErrorLog: log.New(io.Discard, "", 0),
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}, // HTTP/1.1 only
		BaseContext:  func(net.Listener) context.Context { return it.ctx },
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed || s == http.StateHijacked {
				_ = l.Close()
			}
		}}
	_ = srv.Serve(l)
}

// handshakeRefusal is the reason a terminated tunnel's handshake failure is noted under; ""
// for a client that went away or refused the proxy's certificate (its own choice).
func handshakeRefusal(err error, helloRefused bool) string {
	var recordErr tls.RecordHeaderError
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case helloRefused:
		return RefusedSNIMismatch
	case errors.As(err, &recordErr):
		return RefusedInjectionNeedsTLS // not TLS: plain HTTP (or anything else) never gets the credential
	case errors.As(err, &netErr) && netErr.Timeout():
		return RefusedFirstTimeout
	case gone(err), errors.As(err, &opErr) && opErr.Op == "remote error":
		return ""
	}
	return RefusedBadRequest
}

// ServeHTTP checks one request of the tunnel (HTTP/1, not CONNECT, naming the tunnel's
// host and port) and sends it on, Upgrade dropped (the stream stays HTTP the proxy reads).
func (it *interceptedTunnel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if refusal := requestRefusal(r, it.host, it.port); refusal != "" {
		it.p.note(it.g, it.host, it.port, refusal)
		w.Header().Set("Connection", "close")
		http.Error(w, "toolgate egress proxy: "+refusal, http.StatusForbidden)
		return
	}
	r.Header.Del("Upgrade")
	it.rp.ServeHTTP(w, r)
}

// rewrite addresses the request to the real host and sets the injected headers, replacing
// whatever the body sent under those names; request trailers are not carried (a trailer
// could repeat an injected name).
func (it *interceptedTunnel) rewrite(pr *httputil.ProxyRequest) {
	pr.Out.URL.Scheme, pr.Out.URL.Host = "https", it.host
	if it.port != 443 {
		pr.Out.URL.Host = net.JoinHostPort(it.host, strconv.Itoa(int(it.port)))
	}
	pr.Out.Host = ""
	pr.Out.Trailer = nil
	for _, inj := range it.inject {
		pr.Out.Header.Set(inj.Header, inj.Value)
	}
}

// upstreamError answers a request the destination did not answer: 502, noted as
// UpstreamUntrusted when its certificate did not verify, DialFailed otherwise (nothing when
// the client went away).
func (it *interceptedTunnel) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	var verr *tls.CertificateVerificationError
	refusal := RefusedDialFailed
	switch {
	case errors.As(err, &verr):
		refusal = RefusedUpstreamUntrusted
	case r.Context().Err() != nil:
		refusal = ""
	}
	if refusal != "" {
		it.p.note(it.g, it.host, it.port, refusal)
	}
	w.Header().Set("Connection", "close")
	http.Error(w, "toolgate egress proxy: "+refusal, http.StatusBadGateway)
}

// oneConnListener hands http.Server one connection, then blocks until it is closed.
type oneConnListener struct {
	conn  net.Conn
	taken bool
	done  chan struct{}
	once  sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if !l.taken { // Serve calls Accept from one goroutine
		l.taken = true
		return l.conn, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }
