package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/gomega"
)

// testCA is a CA made for one test: its certificate, key and PEM forms.
type testCA struct {
	cert            *x509.Certificate
	key             *ecdsa.PrivateKey
	certPEM, keyPEM []byte
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	kder, _ := x509.MarshalECPrivateKey(key)
	return &testCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})}
}

// serving is a serving certificate for names, signed by the CA.
func (ca *testCA) serving(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// upstream is an HTTPS server that records the headers of every request it answers.
type upstream struct {
	*httptest.Server
	port    int32
	mu      sync.Mutex
	headers []http.Header
}

func newUpstream(t testing.TB, cert tls.Certificate) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		u.mu.Unlock()
		_, _ = io.WriteString(w, "upstream "+r.Host+" "+r.URL.Path)
	}))
	u.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	u.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes the proxy refuses are expected
	u.StartTLS()
	t.Cleanup(u.Close)
	u.port = portOf(u.Listener.Addr())
	return u
}

func (u *upstream) seen() []http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]http.Header(nil), u.headers...)
}

// injectFixture: api.test (with an injection) and other.test (without) resolve to an
// upstream whose certificate the upstream CA signed (the proxy trusts only that CA);
// untrusted.test resolves to one with a certificate of its own.
type injectFixture struct {
	proxy                 *httptest.Server
	rec                   *Recorder
	now                   time.Time
	toolgateCA, upCA      *testCA
	good, untrusted       *upstream
	clientRoots           *x509.CertPool
	goodPort, untrustPort int32
}

func newInjectFixture(t testing.TB, withCA bool, tune ...func(*Config)) *injectFixture {
	t.Helper()
	f := &injectFixture{now: time.Now(), toolgateCA: newTestCA(t, "toolgate egress CA"), upCA: newTestCA(t, "upstream CA")}
	f.good = newUpstream(t, f.upCA.serving(t, "api.test", "other.test"))
	f.untrusted = newUpstream(t, newTestCA(t, "someone else").serving(t, "untrusted.test"))
	f.goodPort, f.untrustPort = f.good.port, f.untrusted.port
	roots := x509.NewCertPool()
	roots.AddCert(f.upCA.cert)
	f.clientRoots = x509.NewCertPool() // the tool trusts the toolgate CA and, for tunnels not terminated, the real one
	f.clientRoots.AddCert(f.toolgateCA.cert)
	f.clientRoots.AddCert(f.upCA.cert)
	loop := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	f.rec = NewRecorder(func() time.Time { return f.now })
	cfg := Config{Key: testKey, Now: func() time.Time { return f.now }, Recorder: f.rec, UpstreamRoots: roots,
		Resolver: StaticResolver{Hosts: map[string][]netip.Addr{"api.test": loop, "other.test": loop, "untrusted.test": loop}}}
	if withCA {
		ca, err := LoadCA(f.toolgateCA.certPEM, f.toolgateCA.keyPEM, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		cfg.CA = ca
	}
	for _, f := range tune {
		f(&cfg)
	}
	h, err := NewProxy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.proxy = httptest.NewServer(h)
	t.Cleanup(f.proxy.Close)
	return f
}

const injectedToken = "Bearer the-real-token"

// grant allows api.test, other.test and untrusted.test on their ports; api.test and
// untrusted.test carry an injected Authorization.
func (f *injectFixture) grant(uid string) Grant {
	return Grant{Namespace: "ns", Call: "c", UID: uid, Attempt: 1, Expires: f.now.Unix() + 60,
		Allow: []Rule{{"api.test", f.goodPort}, {"other.test", f.goodPort}, {"untrusted.test", f.untrustPort}},
		Inject: []Injection{{Host: "api.test", Port: f.goodPort, Header: "Authorization", Value: injectedToken},
			{Host: "untrusted.test", Port: f.untrustPort, Header: "Authorization", Value: injectedToken}}}
}

func (f *injectFixture) client(t testing.TB, g Grant) *http.Client {
	t.Helper()
	cred, err := Sign(testKey, g)
	if err != nil {
		t.Fatal(err)
	}
	pu := mustURL(f.proxy.URL)
	pu.User = url.UserPassword(ProxyUser, cred)
	tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: f.clientRoots}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// do sends GET url with the body's own Authorization and returns status, body and the
// issuer of the certificate the client saw.
func do(t testing.TB, c *http.Client, u string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer the-body-own-value")
	req.Header.Set("X-Body", "kept")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	issuer := ""
	if resp.TLS != nil {
		issuer = resp.TLS.PeerCertificates[0].Issuer.CommonName
	}
	return resp.StatusCode, string(body), issuer
}

func at(host string, port int32) string { return "https://" + host + ":" + strconv.Itoa(int(port)) }

// A tunnel to a destination with an injection is terminated with a leaf of the toolgate CA;
// every request in it reaches the real host with the injected value in place of the body's
// own; a tunnel to another allowed host is passed through untouched.
func TestInjectTLS(t *testing.T) {
	f := newInjectFixture(t, true)
	g := f.grant("inj")
	c := f.client(t, g)
	for i := range 2 { // two requests: one connection kept alive, both injected
		status, body, issuer := do(t, c, at("api.test", f.goodPort)+"/v1/"+strconv.Itoa(i))
		if status != http.StatusOK || body != "upstream api.test:"+strconv.Itoa(int(f.goodPort))+" /v1/"+strconv.Itoa(i) || issuer != "toolgate egress CA" {
			t.Fatalf("api.test: %d %q, certificate from %q", status, body, issuer)
		}
	}
	status, _, issuer := do(t, c, at("other.test", f.goodPort)+"/")
	if status != http.StatusOK || issuer != "upstream CA" {
		t.Fatalf("other.test: %d, certificate from %q: want the real one", status, issuer)
	}
	seen := f.good.seen()
	if len(seen) != 3 {
		t.Fatalf("upstream saw %d requests, want 3", len(seen))
	}
	for i, h := range seen[:2] {
		if got := h.Values("Authorization"); !cmp.Equal(got, []string{injectedToken}) || h.Get("X-Body") != "kept" {
			t.Errorf("request %d to api.test: Authorization %q, X-Body %q; want only the injected value", i, got, h.Get("X-Body"))
		}
	}
	if got := seen[2].Get("Authorization"); got != "Bearer the-body-own-value" {
		t.Errorf("other.test got Authorization %q: a tunnel without an injection is not touched", got)
	}
	rec, _ := f.rec.Get(g.Key())
	want := []Destination{{Host: "api.test", Port: f.goodPort, Allowed: 1}, {Host: "other.test", Port: f.goodPort, Allowed: 1}}
	if diff := cmp.Diff(want, rec.Destinations); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

// Refusals around injection: plain HTTP to the destination, a tunnel that does not start
// TLS, a request naming another host, a destination whose certificate does not verify, a
// ClientHello naming another host, and a proxy without a CA. None reaches an upstream.
func TestInjectRefusals(t *testing.T) {
	f := newInjectFixture(t, true)
	g := f.grant("refusals")
	c := f.client(t, g)
	reason := func(host string) string {
		rec, _ := f.rec.Get(g.Key())
		for _, d := range rec.Destinations {
			if d.Host == host {
				return d.Reason
			}
		}
		return ""
	}
	if resp, err := c.Get("http://api.test:" + strconv.Itoa(int(f.goodPort)) + "/"); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("plain HTTP to api.test: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}
	if r := reason("api.test"); r != RefusedInjectionNeedsTLS {
		t.Errorf("plain HTTP to api.test: reason %q", r)
	}
	if status, body, _ := do(t, c, at("untrusted.test", f.untrustPort)); status != http.StatusBadGateway || !strings.Contains(body, RefusedUpstreamUntrusted) {
		t.Errorf("untrusted.test: %d %q, want 502 UpstreamUntrusted", status, body)
	}
	req, _ := http.NewRequest(http.MethodGet, at("api.test", f.goodPort), nil)
	req.Host = "other.test"
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("Host other.test in the api.test tunnel: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}
	if r := reason("api.test"); r != RefusedHostMismatch {
		t.Errorf("Host other.test in the api.test tunnel: reason %q", r)
	}
	cred, _ := Sign(testKey, g)
	conn, status := connectRaw(t, mustURL(f.proxy.URL).Host, "api.test:"+strconv.Itoa(int(f.goodPort)), cred)
	defer conn.Close()
	if !strings.Contains(status, " 200 ") {
		t.Fatalf("CONNECT: %q", status)
	}
	_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: x\r\n\r\n")
	closedByProxy(t, conn)
	if r := reason("api.test"); r != RefusedInjectionNeedsTLS {
		t.Errorf("plain HTTP in the api.test tunnel: reason %q", r)
	}
	wrongName := f.client(t, g)
	wrongName.Transport.(*http.Transport).TLSClientConfig.ServerName = "other.test"
	if err := getErr(wrongName, at("api.test", f.goodPort)); err == nil {
		t.Error("a ClientHello naming other.test in the api.test tunnel was served")
	}
	if n := len(f.good.seen()) + len(f.untrusted.seen()); n != 0 {
		t.Errorf("upstreams saw %d requests, want none", n)
	}
	// The client sees the handshake fail as the proxy closes the tunnel; the proxy notes
	// the refusal right after, on its own goroutine: wait for it (bounded).
	want := []Destination{{Host: "api.test", Port: f.goodPort, Allowed: 3, Refused: 4, Reason: RefusedSNIMismatch},
		{Host: "untrusted.test", Port: f.untrustPort, Allowed: 1, Refused: 1, Reason: RefusedUpstreamUntrusted}}
	gomega.NewWithT(t).Eventually(func() string {
		got, _ := f.rec.Get(g.Key())
		return cmp.Diff(want, got.Destinations)
	}).WithTimeout(5*time.Second).WithPolling(10*time.Millisecond).Should(gomega.BeEmpty(), "record (-want +got)")
}

// A proxy without a CA refuses a tunnel to a destination with an injection.
func TestInjectWithoutCA(t *testing.T) {
	f := newInjectFixture(t, false)
	g := f.grant("no-ca")
	if err := getErr(f.client(t, g), at("api.test", f.goodPort)); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("a proxy without a CA: %v, want the CONNECT refused", err)
	}
	rec, _ := f.rec.Get(g.Key())
	if diff := cmp.Diff([]Destination{{Host: "api.test", Port: f.goodPort, Refused: 1, Reason: RefusedInjectionUnavailable}}, rec.Destinations); diff != "" {
		t.Errorf("record without a CA (-want +got):\n%s", diff)
	}
	if n := len(f.good.seen()); n != 0 {
		t.Errorf("upstream saw %d requests, want none", n)
	}
}

// Ending the grant closes a terminated tunnel the body holds open.
func TestInjectGrantEndCloses(t *testing.T) {
	f := newInjectFixture(t, true)
	g := f.grant("end")
	cred, _ := Sign(testKey, g)
	conn, status := connectRaw(t, mustURL(f.proxy.URL).Host, "api.test:"+strconv.Itoa(int(f.goodPort)), cred)
	defer conn.Close()
	if !strings.Contains(status, " 200 ") {
		t.Fatalf("CONNECT: %q", status)
	}
	tc := tls.Client(conn, &tls.Config{ServerName: "api.test", RootCAs: f.clientRoots})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	f.rec.End(g.Key(), g.Expires)
	closedByProxy(t, tc)
}
