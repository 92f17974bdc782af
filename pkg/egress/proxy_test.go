package egress

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// proxyFixture is a TLS listener on 127.0.0.1 and a proxy whose resolver maps allowed.test
// and other.test to it, cluster.test into a denied range; loopback is not denied here
// (the listener lives there), 10.0.0.0/8 is.
type proxyFixture struct {
	target   *httptest.Server
	proxy    *httptest.Server
	rec      *Recorder
	port     int32
	now      time.Time
	certPool *x509.CertPool
}

// newProxyFixture builds the fixture; each option changes the proxy's Config before
// NewProxy sees it.
func newProxyFixture(t *testing.T, options ...func(*Config)) *proxyFixture {
	t.Helper()
	f := &proxyFixture{now: time.Unix(1_000_000, 0)}
	f.target = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello from "+r.Host)
	}))
	// Tunnels the tests close before a handshake are not the listener's errors to print.
	f.target.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.target.StartTLS()
	t.Cleanup(f.target.Close)
	f.certPool = x509.NewCertPool()
	f.certPool.AddCert(f.target.Certificate())
	u, _ := url.Parse(f.target.URL)
	port, _ := strconv.Atoi(u.Port())
	f.port = int32(port)
	loop := netip.MustParseAddr("127.0.0.1")
	f.rec = NewRecorder(func() time.Time { return f.now })
	cfg := Config{
		Key: testKey,
		Resolver: StaticResolver{Hosts: map[string][]netip.Addr{
			"allowed.test": {loop}, "other.test": {loop},
			"cluster.test": {netip.MustParseAddr("10.96.0.10")},
			"mixed.test":   {loop, netip.MustParseAddr("::ffff:10.0.0.1")},
		}},
		Deny:     []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Now:      func() time.Time { return f.now },
		Recorder: f.rec,
	}
	for _, o := range options {
		o(&cfg)
	}
	h, err := NewProxy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.proxy = httptest.NewServer(h)
	t.Cleanup(f.proxy.Close)
	return f
}

func (f *proxyFixture) grant(uid string, rules ...Rule) Grant {
	return Grant{Namespace: "ns", Call: "c-" + uid, UID: uid, Attempt: 1, Allow: rules, Expires: f.now.Unix() + 60}
}

// client is a body's HTTP client: HTTPS_PROXY with the signed grant as the password. It
// sends the URL's host as the TLS name (the proxy checks it); the listener's certificate
// names example.com, so the chain is verified for that name.
func (f *proxyFixture) client(t *testing.T, g Grant) *http.Client {
	t.Helper()
	return f.namedClient(t, g, "")
}

// namedClient is client sending serverName as the TLS name (empty: the URL's host).
func (f *proxyFixture) namedClient(t *testing.T, g Grant, serverName string) *http.Client {
	t.Helper()
	cred, err := Sign(testKey, g)
	if err != nil {
		t.Fatal(err)
	}
	pu, _ := url.Parse(f.proxy.URL)
	pu.User = url.UserPassword(ProxyUser, cred)
	tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: f.tlsConfig(serverName)}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// tlsConfig trusts the listener's certificate (for example.com) whatever the TLS name sent:
// serverName, or the URL's host when empty.
func (f *proxyFixture) tlsConfig(serverName string) *tls.Config {
	return &tls.Config{ServerName: serverName, InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection, for example.com
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{DNSName: "example.com", Roots: f.certPool})
			return err
		}}
}

func (f *proxyFixture) get(c *http.Client, host string) (string, error) {
	resp, err := c.Get("https://" + host + ":" + strconv.Itoa(int(f.port)) + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestProxyConnect(t *testing.T) {
	f := newProxyFixture(t)
	g := f.grant("u1", Rule{"allowed.test", f.port}, Rule{"*.wild.test", f.port}, Rule{"cluster.test", f.port}, Rule{"mixed.test", f.port})
	c := f.client(t, g)

	for range 2 {
		body, err := f.get(c, "allowed.test")
		if err != nil || body != "hello from allowed.test:"+strconv.Itoa(int(f.port)) {
			t.Fatalf("allowed.test through the proxy: %q, %v", body, err)
		}
	}
	for _, host := range []string{"other.test", "127.0.0.1", "[::1]", "cluster.test", "mixed.test", "nowhere.wild.test"} {
		if _, err := f.get(c, host); err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("%s through the proxy: err %v, want a refusal (403)", host, err)
		}
	}
	// allowed.test on a port the grant does not name.
	if err := getErr(c, "https://allowed.test:1/"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("allowed.test:1: %v; want a refusal", err)
	}

	rec, ok := f.rec.Get("u1/1")
	if !ok {
		t.Fatal("no record for the attempt")
	}
	want := []Destination{
		{Host: "127.0.0.1", Port: f.port, Refused: 1, Reason: RefusedIPLiteral},
		{Host: "::1", Port: f.port, Refused: 1, Reason: RefusedIPLiteral},
		{Host: "allowed.test", Port: 1, Refused: 1, Reason: RefusedNotAllowed},
		{Host: "allowed.test", Port: f.port, Allowed: 1}, // the second GET reused the tunnel
		{Host: "cluster.test", Port: f.port, Refused: 1, Reason: RefusedDeniedRange},
		{Host: "mixed.test", Port: f.port, Refused: 1, Reason: RefusedDeniedRange},
		{Host: "nowhere.wild.test", Port: f.port, Refused: 1, Reason: RefusedUnresolved},
		{Host: "other.test", Port: f.port, Refused: 1, Reason: RefusedNotAllowed},
	}
	if diff := cmp.Diff(want, rec.Destinations); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

func TestProxyRecordsPerCall(t *testing.T) {
	f := newProxyFixture(t)
	a := f.client(t, f.grant("ua", Rule{"allowed.test", f.port}))
	b := f.client(t, f.grant("ub", Rule{"other.test", f.port}))
	if _, err := f.get(a, "allowed.test"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.get(b, "allowed.test"); err == nil {
		t.Fatal("call b reached allowed.test, which only call a may reach")
	}
	if _, err := f.get(b, "other.test"); err != nil {
		t.Fatal(err)
	}
	ra, _ := f.rec.Get("ua/1")
	rb, _ := f.rec.Get("ub/1")
	wantA := []Destination{{Host: "allowed.test", Port: f.port, Allowed: 1}}
	wantB := []Destination{{Host: "allowed.test", Port: f.port, Refused: 1, Reason: RefusedNotAllowed}, {Host: "other.test", Port: f.port, Allowed: 1}}
	if diff := cmp.Diff(wantA, ra.Destinations); diff != "" {
		t.Errorf("call a (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantB, rb.Destinations); diff != "" {
		t.Errorf("call b (-want +got):\n%s", diff)
	}

	// The records endpoint answers only the bearer of the records token.
	srv := httptest.NewServer(NewRecordsHandler(testKey, f.rec))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, RecordsURL(srv.URL, "ub", 1), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("records without a token: %v, %v", resp, err)
	}
	resp.Body.Close()
	req.Header.Set("Authorization", "Bearer "+RecordsToken(testKey))
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("records with the token: %v, %v", resp, err)
	}
	defer resp.Body.Close()
	var got Record
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantB, got.Destinations); diff != "" {
		t.Errorf("records endpoint (-want +got):\n%s", diff)
	}
}

func TestProxyCredential(t *testing.T) {
	f := newProxyFixture(t)
	plain := &http.Transport{Proxy: http.ProxyURL(mustURL(f.proxy.URL))}
	defer plain.CloseIdleConnections()
	err := getErr(&http.Client{Transport: plain}, "https://allowed.test:"+strconv.Itoa(int(f.port)))
	if err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") {
		t.Errorf("no credential: %v, want 407", err)
	}
	expired := f.grant("ux", Rule{"allowed.test", f.port})
	expired.Expires = f.now.Unix() - 1
	if _, err := f.get(f.client(t, expired), "allowed.test"); err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") {
		t.Errorf("expired credential: %v, want 407", err)
	}
	if _, ok := f.rec.Get("ux/1"); ok {
		t.Error("an unauthenticated request was recorded on a call")
	}
}

func TestProxyPlainHTTP(t *testing.T) {
	f := newProxyFixture(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			t.Error("the credential reached the destination")
		}
		_, _ = io.WriteString(w, "plain "+r.Host)
	}))
	defer target.Close()
	port := mustURL(target.URL).Port()
	p, _ := strconv.Atoi(port)
	c := f.client(t, f.grant("up", Rule{"allowed.test", int32(p)}))
	resp, err := c.Get("http://allowed.test:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "plain allowed.test:"+port {
		t.Errorf("plain HTTP body %q", b)
	}
	resp, err = c.Get("http://127.0.0.1:" + port + "/")
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("plain HTTP to an IP literal: %v, %v; want 403", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// connectRaw opens a CONNECT tunnel by hand and returns the connection and the status line.
func connectRaw(t *testing.T, proxyAddr, target, cred string) (net.Conn, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte(ProxyUser + ":" + cred))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", target, target, auth)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return c, strings.TrimSpace(line)
}

// One attempt holds at most MaxTunnels tunnels open; a closed one frees its slot; another
// attempt is not affected.
func TestProxyTunnelLimit(t *testing.T) {
	f := newProxyFixture(t)
	h, err := NewProxy(Config{Key: testKey, Resolver: StaticResolver{Hosts: map[string][]netip.Addr{"allowed.test": {netip.MustParseAddr("127.0.0.1")}}},
		Deny: nil, Now: func() time.Time { return f.now }, Recorder: f.rec, MaxTunnels: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	addr := mustURL(srv.URL).Host
	target := "allowed.test:" + strconv.Itoa(int(f.port))
	cred, _ := Sign(testKey, f.grant("ut", Rule{"allowed.test", f.port}))
	other, _ := Sign(testKey, f.grant("uo", Rule{"allowed.test", f.port}))

	var open []net.Conn
	for range 2 {
		c, status := connectRaw(t, addr, target, cred)
		if !strings.Contains(status, " 200 ") {
			t.Fatalf("tunnel %d: %q", len(open)+1, status)
		}
		open = append(open, c)
	}
	c, status := connectRaw(t, addr, target, cred)
	c.Close()
	if !strings.Contains(status, " 429 ") {
		t.Fatalf("a third tunnel: %q, want 429", status)
	}
	c, status = connectRaw(t, addr, target, other)
	c.Close()
	if !strings.Contains(status, " 200 ") {
		t.Fatalf("another attempt's tunnel: %q", status)
	}
	open[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, status = connectRaw(t, addr, target, cred)
		c.Close()
		if strings.Contains(status, " 200 ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed tunnel's slot was never freed: %q", status)
		}
		time.Sleep(20 * time.Millisecond) // polling the proxy; no sleep stands in for an event
	}
	open[1].Close()
	rec, _ := f.rec.Get("ut/1")
	if len(rec.Destinations) != 1 || rec.Destinations[0].Reason != RefusedTooManyTunnels || rec.Destinations[0].Refused < 1 {
		t.Errorf("record %+v", rec)
	}
}

// getErr GETs url and returns only the error (closing any body).
func getErr(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err == nil {
		resp.Body.Close()
	}
	return err
}
