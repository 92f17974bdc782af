package egress

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"
)

// Config is the proxy's setup.
type Config struct {
	// Key verifies grants (and derives the records token); at least MinKeyBytes.
	Key []byte
	// Resolver resolves every destination name (net.DefaultResolver in production).
	Resolver Resolver
	// Deny are the ranges no resolved address may lie in (DefaultDeny plus the cluster's).
	Deny []netip.Prefix
	// Now is the clock grants expire and token buckets refill on.
	Now func() time.Time
	// Recorder files what each attempt asked for.
	Recorder *Recorder
	// Log receives one line per refusal (names normalised, never the request's bytes).
	Log *slog.Logger
	// DialTimeout bounds the lookup and the connection to a destination.
	DialTimeout time.Duration
	// MaxTunnels bounds the CONNECT tunnels one attempt holds open at once (default 64):
	// one body cannot take every connection of the proxy.
	MaxTunnels int
	// RatePerSecond and Burst are each attempt's token bucket (defaults DefaultRatePerSecond
	// and DefaultBurst): every CONNECT and every plain-HTTP request takes a token, and one
	// that finds none is refused (RateLimited, HTTP 429), so one body cannot load the proxy
	// with new connections, lookups and requests.
	RatePerSecond float64
	Burst         int
	// FirstMessageTimeout bounds how long a tunnel's client has, from the tunnel's opening,
	// to send its first message complete (default DefaultFirstMessageTimeout); a tunnel
	// whose first message is not complete by then is refused (FirstMessageTimeout).
	FirstMessageTimeout time.Duration
	// CA terminates the tunnels to destinations with an injection (nil: such a tunnel is
	// refused, InjectionUnavailable). UpstreamRoots verify the real destination of a
	// terminated tunnel (nil: the system roots).
	CA            *CA
	UpstreamRoots *x509.CertPool
	// BindWait is how long a request of a grant not yet bound to its Pod (Recorder.Bind)
	// waits for the binding before it is refused (Unbound); 0: binding is not required.
	BindWait time.Duration
}

// proxy decides each request; goproxy (a maintained forward proxy) does the HTTP and the
// CONNECT tunnelling.
type proxy struct {
	cfg     Config
	tunnels *tunnels
	buckets *buckets
	badAuth sampledLog
	ended   sampledLog // requests with an ended grant: no bucket either
	podLog  sampledLog // requests from another address than their grant's Pod: no bucket either

	bindWaiters atomic.Int32 // requests waiting for their grant's binding
}

// NewProxy returns the forward proxy handler: CONNECT for TLS, absolute-URI requests for
// plain HTTP. Every request needs a grant (Proxy-Authorization: Basic, user ProxyUser,
// password the signed grant); the destination must be a name the grant allows on that
// port, the proxy resolves it itself and connects to the address it checked.
func NewProxy(cfg Config) (http.Handler, error) {
	if len(cfg.Key) < MinKeyBytes {
		return nil, fmt.Errorf("proxy key: %d bytes, want at least %d", len(cfg.Key), MinKeyBytes)
	}
	if cfg.Resolver == nil || cfg.Recorder == nil || cfg.Now == nil {
		return nil, errors.New("proxy config: resolver, recorder and clock are required")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxTunnels <= 0 {
		cfg.MaxTunnels = 64
	}
	if cfg.RatePerSecond <= 0 {
		cfg.RatePerSecond = DefaultRatePerSecond
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.FirstMessageTimeout <= 0 {
		cfg.FirstMessageTimeout = DefaultFirstMessageTimeout
	}
	p := &proxy{cfg: cfg, tunnels: &tunnels{open: map[string]map[io.Closer]struct{}{}, max: cfg.MaxTunnels},
		buckets: newBuckets(cfg.RatePerSecond, cfg.Burst, maxAttempts)}
	cfg.Recorder.OnEnd(p.tunnels.closeAll)
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = log.New(io.Discard, "", 0)
	// Never chain to the proxy process's own HTTPS_PROXY; dial only what decide checked.
	gp.ConnectDial, gp.ConnectDialWithReq = nil, nil
	gp.Tr = &http.Transport{DialContext: p.dialChecked, ForceAttemptHTTP2: false,
		ResponseHeaderTimeout: time.Minute, MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}
	gp.NonproxyHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "toolgate egress proxy: send proxy requests (CONNECT or an absolute URI)", http.StatusBadRequest)
	})
	gp.OnRequest().HandleConnectFunc(p.connect)
	gp.OnRequest().DoFunc(p.plain)
	return gp, nil
}

// connect decides a CONNECT: the tunnel goes to the checked address, never to the name.
// A destination with an injection in the grant is terminated (intercept); any other tunnel's
// first message must name the tunnel's host (tunnelConn).
func (p *proxy) connect(hostport string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	g, resp := p.authenticate(ctx.Req, 443) //nolint:bodyclose // goproxy writes this response to the client and closes its body
	if resp != nil {
		ctx.Resp = resp
		return goproxy.RejectConnect, hostport
	}
	if !p.charge(g, hostport, 443) {
		ctx.Resp = refuse(ctx.Req, http.StatusTooManyRequests, RefusedRateLimited) //nolint:bodyclose // goproxy writes this response to the client and closes its body
		return goproxy.RejectConnect, hostport
	}
	host, port := refusedHost(hostport, 443)
	if inject := g.injectionsFor(host, port); len(inject) > 0 {
		return p.intercept(g, hostport, inject, ctx)
	}
	tn := &tunnelConn{p: p, g: g}
	dest, ok := p.open(g, hostport, tn, ctx)
	if !ok {
		return goproxy.RejectConnect, hostport
	}
	tn.host, tn.port = host, port // open allowed it: a name
	// The tunnel's slot is held until its connection to the destination closes.
	ctx.Dialer = func(c context.Context, network, addr string) (net.Conn, error) {
		conn, err := p.dialChecked(c, network, addr)
		if err != nil {
			_ = tn.Close()
			return nil, err
		}
		tcp, isTCP := conn.(*net.TCPConn)
		if !isTCP { // never: dialChecked dials TCP
			_ = tn.Close()
			_ = conn.Close()
			return nil, fmt.Errorf("egress proxy: %T is not a TCP connection", conn)
		}
		if err := tn.start(tcp); err != nil {
			return nil, err
		}
		return tn, nil
	}
	return &goproxy.ConnectAction{Action: goproxy.ConnectAccept}, dest
}

// slotted is a tunnel that holds one of its attempt's slots until it closes.
type slotted interface {
	io.Closer
	setRelease(func())
}

// open takes a tunnel slot for tn and decides the destination: the checked address, or
// false with ctx.Resp set to the refusal (tn closed, its slot given back).
func (p *proxy) open(g Grant, hostport string, tn slotted, ctx *goproxy.ProxyCtx) (string, bool) {
	release, ok := p.tunnels.add(g.Key(), tn)
	if !ok {
		host, port := refusedHost(hostport, 443)
		p.note(g, host, port, RefusedTooManyTunnels)
		ctx.Resp = refuse(ctx.Req, http.StatusTooManyRequests, RefusedTooManyTunnels) //nolint:bodyclose // goproxy writes this response to the client and closes its body
		return "", false
	}
	tn.setRelease(release)
	dest, refusal := p.decide(ctx.Req.Context(), g, hostport, 443)
	if refusal != "" {
		_ = tn.Close()
		ctx.Resp = refuse(ctx.Req, http.StatusForbidden, refusal) //nolint:bodyclose // goproxy writes this response to the client and closes its body
		return "", false
	}
	return dest, true
}

// plain decides a plain-HTTP request: the URL's host becomes the checked address, the Host
// header keeps the name.
func (p *proxy) plain(r *http.Request, _ *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	g, resp := p.authenticate(r, 80)
	if resp != nil {
		return r, resp
	}
	if !p.charge(g, r.URL.Host, 80) {
		return r, refuse(r, http.StatusTooManyRequests, RefusedRateLimited)
	}
	if r.URL.Scheme != "http" {
		p.note(g, InvalidHost, 0, RefusedBadRequest)
		return r, refuse(r, http.StatusBadRequest, RefusedBadRequest)
	}
	// A credential never travels in clear: a destination with an injection is TLS only.
	if host, port := refusedHost(r.URL.Host, 80); len(g.injectionsFor(host, port)) > 0 {
		p.note(g, host, port, RefusedInjectionNeedsTLS)
		return r, refuse(r, http.StatusForbidden, RefusedInjectionNeedsTLS)
	}
	dest, refusal := p.decide(r.Context(), g, r.URL.Host, 80)
	if refusal != "" {
		return r, refuse(r, http.StatusForbidden, refusal)
	}
	if r.Host == "" {
		r.Host = r.URL.Host
	}
	r.URL.Host = dest
	return r, nil
}

// authenticate verifies the request's grant; a response when there is none that holds. A
// grant whose attempt has ended is refused and the refusal noted on that attempt's record.
func (p *proxy) authenticate(r *http.Request, defaultPort int32) (Grant, *http.Response) {
	user, pass, ok := proxyBasicAuth(r.Header.Get("Proxy-Authorization"))
	if !ok || user != ProxyUser {
		resp := refuse(r, http.StatusProxyAuthRequired, "a toolgate call credential is required")
		resp.Header.Set("Proxy-Authenticate", `Basic realm="toolgate egress"`)
		return Grant{}, resp
	}
	now := p.cfg.Now()
	g, err := Verify(p.cfg.Key, pass, now)
	if err != nil {
		if n, log := p.badAuth.take(now); log {
			p.cfg.Log.Info("refused a request", "why", err.Error(), "alsoRefusedSinceLastLine", n)
		}
		return Grant{}, refuse(r, http.StatusProxyAuthRequired, err.Error())
	}
	if p.cfg.Recorder.Ended(g.Key()) {
		host, port := refusedHost(r.URL.Host, defaultPort)
		p.cfg.Recorder.Note(g, host, port, RefusedGrantEnded)
		if n, log := p.ended.take(now); log {
			p.cfg.Log.Info("refused a destination", "namespace", g.Namespace, "call", g.Call, "attempt", g.Attempt,
				"host", host, "port", port, "reason", RefusedGrantEnded, "alsoRefusedSinceLastLine", n)
		}
		return Grant{}, refuse(r, http.StatusProxyAuthRequired, "the credential's call has ended ("+RefusedGrantEnded+")")
	}
	if refusal := p.podRefusal(r.Context(), g, r.RemoteAddr); refusal != "" {
		host, port := refusedHost(r.URL.Host, defaultPort)
		p.cfg.Recorder.Note(g, host, port, refusal)
		if n, log := p.podLog.take(now); log {
			p.cfg.Log.Info("refused a destination", "namespace", g.Namespace, "call", g.Call, "attempt", g.Attempt,
				"host", host, "port", port, "reason", refusal, "alsoRefusedSinceLastLine", n)
		}
		return Grant{}, refuse(r, http.StatusProxyAuthRequired, "the credential works only from its call's Pod ("+refusal+")")
	}
	return g, nil
}

// decide returns the address to connect to for host[:port], or why not; it records the
// decision on the grant's attempt either way.
func (p *proxy) decide(ctx context.Context, g Grant, hostport string, defaultPort int32) (string, string) {
	host, port, ok := splitHostPort(hostport, defaultPort)
	if !ok {
		p.note(g, InvalidHost, 0, RefusedBadRequest)
		return "", RefusedBadRequest
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err == nil {
		p.note(g, a.String(), port, RefusedIPLiteral)
		return "", RefusedIPLiteral
	}
	name, ok := NormalizeHost(host)
	if !ok {
		p.note(g, InvalidHost, port, RefusedInvalidHost)
		return "", RefusedInvalidHost
	}
	if !Allowed(g.Allow, name, port) {
		p.note(g, name, port, RefusedNotAllowed)
		return "", RefusedNotAllowed
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
	defer cancel()
	addrs, err := p.cfg.Resolver.LookupNetIP(ctx, "ip", name)
	if err != nil || len(addrs) == 0 {
		p.note(g, name, port, RefusedUnresolved)
		return "", RefusedUnresolved
	}
	// Every address must be outside the denied ranges: a name that resolves to one public
	// and one cluster address is refused, whichever the proxy would have picked.
	for _, a := range addrs {
		if Denied(p.cfg.Deny, a) {
			p.note(g, name, port, RefusedDeniedRange)
			return "", RefusedDeniedRange
		}
	}
	p.note(g, name, port, "")
	return netip.AddrPortFrom(addrs[0].Unmap(), uint16(port)).String(), ""
}

// charge takes a token from g's bucket for a request to hostport; false when there was none
// (the refusal is recorded: memory stays bounded, the Recorder's limits hold whatever the
// count). Only the first refusal of a run is logged: a body that ignores its 429s must not
// turn each one into a log line.
func (p *proxy) charge(g Grant, hostport string, defaultPort int32) bool {
	ok, first := p.buckets.take(g, p.cfg.Now())
	if !ok {
		host, port := refusedHost(hostport, defaultPort)
		p.record(g, host, port, RefusedRateLimited, first)
	}
	return ok
}

// refusedHost is what a refusal made before decide is recorded under: the normalised name,
// or InvalidHost for anything else.
func refusedHost(hostport string, defaultPort int32) (string, int32) {
	host, port, _ := splitHostPort(hostport, defaultPort)
	if n, ok := NormalizeHost(host); ok {
		return n, port
	}
	return InvalidHost, port
}

func (p *proxy) note(g Grant, host string, port int32, refusal string) {
	p.record(g, host, port, refusal, refusal != "")
}

// record files one request on g's attempt, and logs it when loud.
func (p *proxy) record(g Grant, host string, port int32, refusal string, loud bool) {
	p.cfg.Recorder.Note(g, host, port, refusal)
	if loud {
		p.cfg.Log.Info("refused a destination", "namespace", g.Namespace, "call", g.Call,
			"attempt", g.Attempt, "host", host, "port", port, "reason", refusal)
	}
}

// dialChecked is the only way out: it dials an address literal that decide produced, and
// checks it once more, so that no path through goproxy can reach a name or a denied range.
func (p *proxy) dialChecked(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || Denied(p.cfg.Deny, ap.Addr()) {
		return nil, fmt.Errorf("egress proxy: %q is not a checked destination", addr)
	}
	d := net.Dialer{Timeout: p.cfg.DialTimeout}
	return d.DialContext(ctx, network, ap.String())
}

func splitHostPort(hostport string, defaultPort int32) (string, int32, bool) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		// No port: the whole is the host (a bare IPv6 literal must be bracketed).
		if strings.Contains(hostport, ":") && !strings.HasPrefix(hostport, "[") {
			return "", 0, false
		}
		return hostport, defaultPort, hostport != ""
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 || host == "" {
		return "", 0, false
	}
	return host, int32(port), true
}

func proxyBasicAuth(h string) (user, pass string, ok bool) {
	const prefix = "Basic "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(h[len(prefix):])
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(raw), ":")
}

func refuse(r *http.Request, status int, why string) *http.Response {
	resp := goproxy.NewResponse(r, goproxy.ContentTypeText, status, "toolgate egress proxy: "+why+"\n")
	return resp
}
