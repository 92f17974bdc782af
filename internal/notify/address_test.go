package notify

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

func TestAddressPolicyCheck(t *testing.T) {
	policy := AddressPolicy{
		Deny:  mustPrefixes("203.0.113.0/24", "2001:db8:1::/48"),
		Allow: mustPrefixes("10.1.2.3/32", "198.51.100.0/24", "203.0.113.9/32"),
	}
	for addr, refused := range map[string]bool{
		"127.0.0.1":              true, // loopback
		"127.5.6.7":              true,
		"::1":                    true,
		"::ffff:127.0.0.1":       true, // IPv4-mapped loopback
		"::127.0.0.1":            true, // IPv4-compatible
		"0.0.0.0":                true, // reaches the local host
		"::":                     true,
		"169.254.169.254":        true, // cloud metadata
		"::ffff:169.254.169.254": true,
		"169.254.10.1":           true, // link-local
		"fe80::1":                true,
		"fe80::1%eth0":           true, // a zone does not hide it
		"fd00:ec2::254":          true, // a cloud's IPv6 metadata (unique local)
		"100.100.100.200":        true, // shared address space (a cloud's metadata)
		"192.0.0.192":            true, // a cloud's metadata
		"10.96.0.1":              true, // a Service range
		"10.244.1.7":             true, // a Pod range
		"172.18.0.2":             true, // a node address
		"192.168.1.1":            true,
		"::ffff:192.168.0.1":     true,
		"224.0.0.1":              true, // multicast
		"ff02::1":                true,
		"255.255.255.255":        true, // broadcast
		"64:ff9b::a9fe:a9fe":     true, // NAT64 of 169.254.169.254
		"64:ff9b::7f00:1":        true, // NAT64 of 127.0.0.1
		"2002:7f00:1::1":         true, // 6to4 of 127.0.0.1
		"203.0.113.7":            true, // --approval-sink-deny-cidrs
		"64:ff9b::cb00:7107":     true, // NAT64 of it
		"2001:db8:1::5":          true,
		"[invalid]":              true,
		"93.184.216.34":          false, // public addresses
		"::ffff:93.184.216.34":   false,
		"2606:4700:4700::1111":   false,
		"64:ff9b::5db8:d822":     false, // NAT64 of a public address
		"2002:5db8:d822::1":      false, // 6to4 of a public address
		"172.32.0.1":             false, // just past 172.16.0.0/12
		"2001:db8:2::1":          false, // just past the denied /48
		"10.1.2.3":               false, // allowed
		"::ffff:10.1.2.3":        false, // allowed, mapped
		"10.1.2.4":               true,  // its neighbour is not
		"203.0.113.9":            false, // allowed beats denied
		"198.51.100.20":          false,
	} {
		a, _ := netip.ParseAddr(strings.Trim(addr, "[]")) // "[invalid]" stays the zero Addr
		err := CheckAddress(policy, a)
		if (err != nil) != refused {
			t.Errorf("Check(%s) = %v, want refused=%v", addr, err, refused)
		}
		if err != nil && !errors.Is(err, ErrAddressRefused) {
			t.Errorf("Check(%s) = %v, not ErrAddressRefused", addr, err)
		}
	}
}

func TestAddressPolicyWithoutAllowList(t *testing.T) {
	var p AddressPolicy
	for _, a := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1", "169.254.169.254", "fe80::1", "10.0.0.1"} {
		if err := CheckAddress(p, netip.MustParseAddr(a)); err == nil {
			t.Errorf("the built-in ranges do not refuse %s", a)
		}
	}
	if err := CheckAddress(p, netip.MustParseAddr("93.184.216.34")); err != nil {
		t.Errorf("a public address is refused: %v", err)
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes(" 10.96.0.0/12, 172.18.0.2 ,fd00::/108,::1,::ffff:10.1.0.0/112,10.1.2.3/8,")
	if err != nil {
		t.Fatal(err)
	}
	want := mustPrefixes("10.96.0.0/12", "172.18.0.2/32", "fd00::/108", "::1/128", "10.1.0.0/16", "10.0.0.0/8")
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("ParsePrefixes (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "fe80::1%eth0", "10.0.0"} {
		if _, err := ParsePrefixes(bad); err == nil {
			t.Errorf("ParsePrefixes(%q) accepted it", bad)
		}
	}
	if got, err := ParsePrefixes(""); err != nil || got != nil {
		t.Errorf(`ParsePrefixes("") = %v, %v`, got, err)
	}
}

// A scope's sink at a refused address is never connected to, whatever the URL spells
// (an address, a name that resolves to it), and its event reads exactly as that of a sink
// whose port is closed or whose host never answers: the note does not tell them apart.
func TestSinkAddressesAreCheckedWhenDialling(t *testing.T) {
	var connections atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			connections.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	closed := closedPort(t)
	hang := hangingListener(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "k", Namespace: "ns"}, Type: v1alpha1.SecretTypeApprovalSinkKey,
		Data: map[string][]byte{"hmac-key": []byte("key")}}
	loopback := AddressPolicy{Allow: mustPrefixes("127.0.0.0/8")}
	deliver := func(url string, policy AddressPolicy) []note {
		t.Helper()
		opts := Options{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, Timeout: 300 * time.Millisecond,
			Addresses: policy, TLSConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig}
		n := newNotifierOpts(t, url, opts, secret)
		n.Notify(context.Background(), event())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		drain(ctx, n, 10)
		return notesOf(n)
	}
	refused := map[string][]note{
		"loopback address":          deliver("https://127.0.0.1:"+strconv.Itoa(port)+"/hook", AddressPolicy{}),
		"a name for loopback":       deliver("https://localhost:"+strconv.Itoa(port)+"/hook", AddressPolicy{}),
		"IPv4-mapped loopback":      deliver("https://[::ffff:127.0.0.1]:"+strconv.Itoa(port)+"/hook", AddressPolicy{}),
		"closed port (allowed)":     deliver("https://127.0.0.1:"+strconv.Itoa(closed)+"/hook", loopback),
		"silent host (allowed)":     deliver("https://"+hang+"/hook", loopback),
		"metadata address":          deliver("https://169.254.169.254:"+strconv.Itoa(port)+"/latest", AddressPolicy{}),
		"a denied range":            deliver("https://127.0.0.1:"+strconv.Itoa(port)+"/hook", AddressPolicy{Deny: mustPrefixes("127.0.0.1/32")}),
		"IPv6 loopback, in a name":  deliver("https://[::1]:"+strconv.Itoa(port)+"/hook", AddressPolicy{}),
		"link-local IPv6 (a zone)":  deliver("https://[fe80::1%25lo]:"+strconv.Itoa(port)+"/hook", AddressPolicy{}),
		"unspecified: the own host": deliver("https://0.0.0.0:"+strconv.Itoa(port)+"/hook", AddressPolicy{}),
	}
	if c := connections.Load(); c != 0 {
		t.Errorf("the sink's server got %d connections from refused dials", c)
	}
	want := []note{{regarding: "ns/c", related: "ToolScope ns/team spec.approvalSinks{s}", typ: corev1.EventTypeWarning,
		reason: EventNotificationFailed, action: "NotifyRequested",
		text: "approval event Requested not delivered to sink team/s after 2 attempt(s): the sink is unreachable"}}
	for name, got := range refused {
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(note{})); diff != "" {
			t.Errorf("%s: the events (-want +got):\n%s", name, diff)
		}
	}

	allowed := deliver("https://127.0.0.1:"+strconv.Itoa(port)+"/hook", loopback)
	if len(allowed) != 0 || connections.Load() == 0 {
		t.Errorf("an allowed address was not delivered to: events %v, %d connections", allowed, connections.Load())
	}
}

// The default sink is the operator's own (a flag, not a tenant's input): it is not checked.
func TestDefaultSinkIsNotChecked(t *testing.T) {
	var got atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	keyFile := t.TempDir() + "/key"
	if err := os.WriteFile(keyFile, []byte("key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := Options{MaxAttempts: 1, Timeout: 2 * time.Second, TLSConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig,
		Default: &DefaultSink{URL: srv.URL, KeyFile: keyFile}}
	n := newNotifierOpts(t, "https://127.0.0.1:1/", opts, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "k", Namespace: "ns"}})
	ev := event()
	ev.Scope = ""
	n.Notify(context.Background(), ev)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	drain(ctx, n, 5)
	if got.Load() != 1 {
		t.Errorf("the default sink on loopback got %d requests, want 1 (events %v)", got.Load(), notesOf(n))
	}
}

// closedPort is a loopback port where nothing listens.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

// hangingListener accepts connections and never answers (a filtered or silent host, as
// far as a client's timeout can tell); it returns its host:port.
func hangingListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}
