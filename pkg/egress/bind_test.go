package egress

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// bindPod asks the records handler to bind g's attempt to ip and returns the status.
func bindPod(t *testing.T, records *httptest.Server, g Grant, body, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, PodURL(records.URL, g.UID, g.Attempt), strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// fromClient is the body's client dialling the proxy from source address src.
func (f *proxyFixture) fromClient(t *testing.T, g Grant, src string) *http.Client {
	t.Helper()
	c := f.client(t, g)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c.Transport.(*http.Transport).DialContext = d.DialContext
	return c
}

func bindWait(d time.Duration) func(*Config) { return func(c *Config) { c.BindWait = d } }

// A bound grant works from its Pod's address only; another address is refused (407,
// WrongPod, on the record); binding again is idempotent, another address a conflict.
func TestBindWrongPod(t *testing.T) {
	f := newProxyFixture(t, bindWait(10*time.Second))
	records := httptest.NewServer(NewRecordsHandler(testKey, f.rec))
	defer records.Close()
	g := f.grant("bound", Rule{"allowed.test", f.port})
	for _, tc := range []struct {
		body, token string
		want        int
	}{
		{`{"ip":"127.0.0.2"}`, "wrong", http.StatusUnauthorized},
		{`{"ip":"not an address"}`, RecordsToken(testKey), http.StatusBadRequest},
		{`{"ip":"0.0.0.0"}`, RecordsToken(testKey), http.StatusBadRequest},
		{`{"ip":"127.0.0.2"}`, RecordsToken(testKey), http.StatusNoContent},
		{`{"ip":"127.0.0.2"}`, RecordsToken(testKey), http.StatusNoContent},
		{`{"ip":"::ffff:127.0.0.2"}`, RecordsToken(testKey), http.StatusNoContent},
		{`{"ip":"127.0.0.3"}`, RecordsToken(testKey), http.StatusConflict},
	} {
		if got := bindPod(t, records, g, tc.body, tc.token); got != tc.want {
			t.Errorf("POST pod %s: %d, want %d", tc.body, got, tc.want)
		}
	}
	if _, err := f.get(f.fromClient(t, g, "127.0.0.2"), "allowed.test"); err != nil {
		t.Errorf("from the bound address: %v", err)
	}
	if _, err := f.get(f.fromClient(t, g, "127.0.0.1"), "allowed.test"); err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") {
		t.Errorf("from another address: %v, want 407", err)
	}
	plain := f.fromClient(t, g, "127.0.0.1")
	if resp, err := plain.Get("http://allowed.test:" + strconv.Itoa(int(f.port)) + "/"); err != nil || resp.StatusCode != http.StatusProxyAuthRequired {
		t.Errorf("plain HTTP from another address: %v %v, want 407", resp, err)
	} else {
		resp.Body.Close()
	}
	rec, _ := f.rec.Get(g.Key())
	want := []Destination{{Host: "allowed.test", Port: f.port, Allowed: 1, Refused: 2, Reason: RefusedWrongPod}}
	if diff := cmp.Diff(want, rec.Destinations); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

// A request of a grant not yet bound waits for the binding: it passes when the binding
// comes while it waits, and is refused (Unbound) when none comes within BindWait.
func TestBindWait(t *testing.T) {
	waiting := make(chan string, 1)
	f := newProxyFixture(t, bindWait(10*time.Second))
	f.rec.pods.onWait = func(key string) { waiting <- key }
	records := httptest.NewServer(NewRecordsHandler(testKey, f.rec))
	defer records.Close()
	g := f.grant("late", Rule{"allowed.test", f.port})
	done := make(chan error, 1)
	go func() {
		_, err := f.get(f.client(t, g), "allowed.test")
		done <- err
	}()
	select {
	case key := <-waiting:
		if key != g.Key() {
			t.Fatalf("waiting for %s, want %s", key, g.Key())
		}
	case err := <-done:
		t.Fatalf("the request of an unbound grant did not wait for its binding: %v", err)
	}
	if got := bindPod(t, records, g, `{"ip":"127.0.0.1"}`, RecordsToken(testKey)); got != http.StatusNoContent {
		t.Fatalf("POST pod: %d", got)
	}
	if err := <-done; err != nil {
		t.Errorf("a request bound while it waited: %v", err)
	}

	short := newProxyFixture(t, bindWait(100*time.Millisecond))
	g = short.grant("never", Rule{"allowed.test", short.port})
	start := time.Now()
	if _, err := short.get(short.client(t, g), "allowed.test"); err == nil || !strings.Contains(err.Error(), "Proxy Authentication Required") {
		t.Errorf("a grant never bound: %v, want 407", err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Errorf("refused after %s, before BindWait", waited)
	}
	rec, _ := short.rec.Get(g.Key())
	if diff := cmp.Diff([]Destination{{Host: "allowed.test", Port: short.port, Refused: 1, Reason: RefusedUnbound}}, rec.Destinations); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

// BindWait 0: binding is not required (an operator that never binds).
func TestBindNotRequired(t *testing.T) {
	f := newProxyFixture(t)
	if _, err := f.get(f.client(t, f.grant("free", Rule{"allowed.test", f.port})), "allowed.test"); err != nil {
		t.Error(err)
	}
}

// Bindings: bounded, dropped when their grant ends, expiring with the grant once seen.
func TestBindings(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	r := NewRecorder(func() time.Time { return now })
	a := netip.MustParseAddr("10.244.0.7")
	if err := r.Bind("u/1", a); err != nil {
		t.Fatal(err)
	}
	g := Grant{UID: "u", Attempt: 1, Expires: now.Unix() + 30}
	if got, ok, _ := r.boundPod(g); !ok || got != a {
		t.Fatalf("boundPod = %v %v", got, ok)
	}
	now = now.Add(31 * time.Second) // past the grant's expiry, which the lookup recorded
	if _, ok, _ := r.boundPod(g); ok {
		t.Error("a binding outlived its grant")
	}
	if err := r.Bind("u/1", netip.MustParseAddr("10.244.0.8")); err != nil {
		t.Errorf("binding an expired entry again: %v", err)
	}
	r.End("u/1", now.Unix()+60)
	if _, ok, _ := r.boundPod(Grant{UID: "u", Attempt: 1, Expires: now.Unix() + 60}); ok {
		t.Error("a binding outlived its grant's end")
	}
	if err := r.Bind("u/1", a); err != nil || len(r.pods.pods) != 0 {
		t.Errorf("binding an ended attempt: %v, %d entries; want a no-op", err, len(r.pods.pods))
	}
	for i := range maxBindings + 1 {
		_ = r.Bind("many/"+strconv.Itoa(i), a)
	}
	if n := len(r.pods.pods); n != maxBindings {
		t.Errorf("%d bindings kept, want at most %d", n, maxBindings)
	}
}
