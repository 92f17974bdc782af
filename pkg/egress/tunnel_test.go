package egress

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tunnelFixture is the proxy fixture with two more listeners allowed.test resolves to: a
// plain-HTTP server that notes the Host of each request it serves, and a TCP echo.
type tunnelFixture struct {
	*proxyFixture
	plainPort, echoPort int32
	mu                  sync.Mutex
	hosts               []string // Host of each request the plain server answered
}

func newTunnelFixture(t *testing.T, options ...func(*Config)) *tunnelFixture {
	t.Helper()
	f := &tunnelFixture{proxyFixture: newProxyFixture(t, options...)}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.hosts = append(f.hosts, r.Host)
		f.mu.Unlock()
		_, _ = io.WriteString(w, r.Method+" "+r.Host+" "+string(body))
	}))
	t.Cleanup(plain.Close)
	f.plainPort = portOf(plain.Listener.Addr())
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	f.echoPort = portOf(echo.Addr())
	return f
}

func portOf(a net.Addr) int32 { return int32(a.(*net.TCPAddr).Port) }

func (f *tunnelFixture) served() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.hosts...)
}

// credential signs a grant for uid allowing allowed.test on the TLS, plain and echo ports.
func (f *tunnelFixture) credential(t *testing.T, uid string) (Grant, string) {
	t.Helper()
	g := f.grant(uid, Rule{"allowed.test", f.port}, Rule{"allowed.test", f.plainPort}, Rule{"allowed.test", f.echoPort})
	cred, err := Sign(testKey, g)
	if err != nil {
		t.Fatal(err)
	}
	return g, cred
}

// tunnel opens a CONNECT tunnel to allowed.test:port and fails the test unless it is open.
func (f *tunnelFixture) tunnel(t *testing.T, cred string, port int32) net.Conn {
	t.Helper()
	c, status := connectRaw(t, mustURL(f.proxy.URL).Host, "allowed.test:"+strconv.Itoa(int(port)), cred)
	t.Cleanup(func() { c.Close() })
	if !strings.Contains(status, " 200 ") {
		t.Fatalf("CONNECT allowed.test:%d: %q", port, status)
	}
	return c
}

// closedByProxy reads c until the proxy closes it; the deadline only keeps a broken proxy
// from hanging the test.
func closedByProxy(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the proxy kept the tunnel open")
	}
}

func (f *tunnelFixture) record(t *testing.T, g Grant) []Destination {
	t.Helper()
	rec, _ := f.rec.Get(g.Key())
	return rec.Destinations
}

// A TLS tunnel passes when its ClientHello names the tunnel's host (in any case), and is
// closed before any byte reaches the destination when it names another host or none; the
// refusal is on the record under the tunnel's host.
func TestTunnelSNI(t *testing.T) {
	f := newTunnelFixture(t)
	g, cred := f.credential(t, "sni")
	for _, name := range []string{"allowed.test", "Allowed.TEST"} {
		body, err := f.get(f.namedClient(t, g, name), "allowed.test")
		if err != nil || !strings.HasPrefix(body, "hello from allowed.test") {
			t.Errorf("ClientHello for %s in a tunnel to allowed.test: %q, %v", name, body, err)
		}
	}
	if body, err := f.get(f.namedClient(t, g, "other.test"), "allowed.test"); err == nil {
		t.Errorf("ClientHello for other.test in a tunnel to allowed.test: answered %q", body)
	}
	// No server_name at all: a raw tunnel and a TLS client with no name.
	c := f.tunnel(t, cred, f.port)
	if err := tls.Client(c, &tls.Config{InsecureSkipVerify: true}).Handshake(); err == nil { //nolint:gosec // no name to verify: the proxy must refuse first
		t.Error("a ClientHello without server_name: the handshake completed")
	}
	want := []Destination{{Host: "allowed.test", Port: f.port, Allowed: 4, Refused: 2, Reason: RefusedSNIMismatch}}
	if diff := cmp.Diff(want, f.record(t, g)); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

// An Encrypted Client Hello hides the name it means behind the outer one: refused whatever
// the outer name.
func TestHelloRefusal(t *testing.T) {
	tn := &tunnelConn{host: "allowed.test"}
	cases := []struct {
		hello tls.ClientHelloInfo
		want  string
	}{
		{tls.ClientHelloInfo{ServerName: "allowed.test"}, ""},
		{tls.ClientHelloInfo{ServerName: "ALLOWED.test"}, ""},
		{tls.ClientHelloInfo{ServerName: "other.test"}, RefusedSNIMismatch},
		{tls.ClientHelloInfo{ServerName: ""}, RefusedSNIMismatch},
		{tls.ClientHelloInfo{ServerName: "a.allowed.test"}, RefusedSNIMismatch},
		{tls.ClientHelloInfo{ServerName: "allowed.test", Extensions: []uint16{0, extensionEncryptedClientHello}}, RefusedSNIMismatch},
	}
	for _, c := range cases {
		if got := tn.helloRefusal(&c.hello); got != c.want {
			t.Errorf("hello %q %v: %q, want %q", c.hello.ServerName, c.hello.Extensions, got, c.want)
		}
	}
}

// answer is a response read from a tunnel.
type answer struct {
	status int
	body   string
}

// exchange writes req into c and reads one response (nil when the proxy closed the tunnel).
func exchange(t *testing.T, c net.Conn, br *bufio.Reader, req string) *answer {
	t.Helper()
	if _, err := io.WriteString(c, req); err != nil {
		return nil
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("no answer and no close for %q", req)
		}
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return &answer{resp.StatusCode, string(body)}
}

// Every request of a plain-HTTP tunnel must name the tunnel's host (Host or absolute URL);
// the first that does not closes the tunnel, and the destination sees only the requests
// the proxy checked, framed as the proxy read them.
func TestTunnelPlainHTTP(t *testing.T) {
	f := newTunnelFixture(t)
	g, cred := f.credential(t, "plain")
	hostport := "allowed.test:" + strconv.Itoa(int(f.plainPort))

	c := f.tunnel(t, cred, f.plainPort)
	br := bufio.NewReader(c)
	for _, req := range []string{
		"GET / HTTP/1.1\r\nHost: " + hostport + "\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: ALLOWED.test\r\nContent-Length: 5\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nhello",
	} {
		if resp := exchange(t, c, br, req); resp == nil || resp.status != http.StatusOK {
			t.Fatalf("%q: %+v", req, resp)
		}
	}
	if resp := exchange(t, c, br, "GET / HTTP/1.1\r\nHost: other.test\r\n\r\n"); resp != nil {
		t.Errorf("a later request for other.test was answered: %q", resp.body)
	}
	closedByProxy(t, c)

	for _, req := range []string{
		"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"GET http://other.test/ HTTP/1.1\r\nHost: " + hostport + "\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: allowed.test:1\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
		// One request to the proxy, two to a server that takes the Content-Length.
		"POST / HTTP/1.1\r\nHost: " + hostport + "\r\nTransfer-Encoding: chunked\r\nContent-Length: 45\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: " + hostport + "\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: other.test\r\n\r\n",
		"get / http/1.1\r\nHost: other.test\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	} {
		c := f.tunnel(t, cred, f.plainPort)
		br := bufio.NewReader(c)
		for resp := exchange(t, c, br, req); resp != nil; resp = exchange(t, c, br, "") {
			if !strings.HasPrefix(resp.body, "GET "+hostport) && !strings.HasPrefix(resp.body, "POST "+hostport) {
				t.Errorf("%q: answered %q", req, resp.body)
			}
		}
		closedByProxy(t, c)
	}
	for _, h := range f.served() {
		if !strings.HasPrefix(strings.ToLower(h), "allowed.test") {
			t.Errorf("the destination served a request for %q", h)
		}
	}
	rec := f.record(t, g)
	if len(rec) != 1 || rec[0].Refused != 9 || rec[0].Allowed != 9 {
		t.Errorf("record %+v: want 9 tunnels allowed, 9 refused", rec)
	}
}

// A tunnel whose first bytes are neither TLS nor a line naming HTTP/ is passed on unread
// (ssh, a binary protocol), first bytes included; a request-like line too long to tell is
// refused.
func TestTunnelOtherProtocols(t *testing.T) {
	f := newTunnelFixture(t)
	g, cred := f.credential(t, "other")
	for _, first := range []string{"SSH-2.0-OpenSSH_9.6\r\n", "\x00\x00\x00\x08\x04\xd2\x16\x2f", "\r\n*1\r\n$4\r\nPING\r\n"} {
		c := f.tunnel(t, cred, f.echoPort)
		if _, err := io.WriteString(c, first+"more"); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(first)+4)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != first+"more" {
			t.Errorf("%q through a tunnel: echoed %q, %v", first, got, err)
		}
	}
	c := f.tunnel(t, cred, f.echoPort)
	_, _ = io.WriteString(c, "GET /"+strings.Repeat("a", maxFirstLine))
	closedByProxy(t, c)
	want := []Destination{{Host: "allowed.test", Port: f.echoPort, Allowed: 4, Refused: 1, Reason: RefusedBadRequest}}
	if diff := cmp.Diff(want, f.record(t, g)); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

// A client that sends nothing, or only part of its first message, loses the tunnel after
// FirstMessageTimeout; one that completed it keeps an idle tunnel.
func TestTunnelFirstMessageTimeout(t *testing.T) {
	f := newTunnelFixture(t, func(c *Config) { c.FirstMessageTimeout = 300 * time.Millisecond })
	g, cred := f.credential(t, "slow")
	idle := f.tunnel(t, cred, f.echoPort)
	if _, err := io.WriteString(idle, "SSH-2.0-x\r\n"); err != nil {
		t.Fatal(err)
	}
	for _, partial := range []string{"", "\x16\x03\x01\x02\x00\x01", "GET / HTTP/1.1\r\nHost: allowed.test\r\n"} {
		c := f.tunnel(t, cred, f.plainPort)
		_, _ = io.WriteString(c, partial)
		closedByProxy(t, c)
	}
	want := byPort(Destination{Host: "allowed.test", Port: f.echoPort, Allowed: 1},
		Destination{Host: "allowed.test", Port: f.plainPort, Allowed: 3, Refused: 3, Reason: RefusedFirstTimeout})
	if diff := cmp.Diff(want, f.record(t, g)); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	// The tunnel whose first message passed is still open, past every timeout above.
	if _, err := io.WriteString(idle, "ping"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len("SSH-2.0-x\r\nping"))
	_ = idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(idle, got); err != nil {
		t.Errorf("the tunnel with a complete first message: %q, %v", got, err)
	}
}
