package egress

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeClock is the proxy's clock in the rate tests: the handler reads it on the proxy's
// goroutines, the test moves it between requests.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *fakeClock) now() time.Time               { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) add(d time.Duration)          { c.ns.Add(int64(d)) }
func (c *fakeClock) at(d time.Duration) time.Time { return c.now().Add(d) }

// lockedBuffer collects the proxy's log lines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

// rateFixture is the proxy fixture with a fake clock, a bucket of burst tokens refilled at
// one a second, its log collected, and a plain-HTTP listener on 127.0.0.1 (allowed.test).
type rateFixture struct {
	*proxyFixture
	clock     *fakeClock
	logs      *lockedBuffer
	plainPort int32
}

func newRateFixture(t *testing.T, burst int) *rateFixture {
	t.Helper()
	clock, logs := newFakeClock(time.Unix(1_000_000, 0)), &lockedBuffer{}
	f := &rateFixture{clock: clock, logs: logs}
	f.proxyFixture = newProxyFixture(t, func(c *Config) {
		c.Now, c.RatePerSecond, c.Burst = clock.now, 1, burst
		c.Log = slog.New(slog.NewTextHandler(logs, nil))
	})
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "plain") }))
	t.Cleanup(plain.Close)
	p, _ := strconv.Atoi(mustURL(plain.URL).Port())
	f.plainPort = int32(p)
	return f
}

// credential signs a grant for uid that allows allowed.test on the TLS and the plain port.
func (f *rateFixture) credential(t *testing.T, uid string) (Grant, string) {
	t.Helper()
	g := f.grant(uid, Rule{"allowed.test", f.port}, Rule{"allowed.test", f.plainPort})
	cred, err := Sign(testKey, g)
	if err != nil {
		t.Fatal(err)
	}
	return g, cred
}

// plainStatus sends one plain-HTTP request to allowed.test through the proxy.
func (f *rateFixture) plainStatus(t *testing.T, c *http.Client) int {
	t.Helper()
	resp, err := c.Get("http://allowed.test:" + strconv.Itoa(int(f.plainPort)) + "/")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// connectStatus opens one CONNECT tunnel to allowed.test, closes it, and returns the status
// line.
func (f *rateFixture) connectStatus(t *testing.T, cred string) string {
	t.Helper()
	c, status := connectRaw(t, mustURL(f.proxy.URL).Host, "allowed.test:"+strconv.Itoa(int(f.port)), cred)
	c.Close()
	return status
}

// A grant's burst passes, the next request is refused (429, RateLimited, on the record and
// logged once per run); the bucket refills on the clock; another grant has its own bucket.
func TestProxyRateLimit(t *testing.T) {
	f := newRateFixture(t, 3)
	ga, _ := f.credential(t, "ra")
	a := f.client(t, ga)
	for i := range 3 {
		if got := f.plainStatus(t, a); got != http.StatusOK {
			t.Fatalf("request %d of the burst: %d", i+1, got)
		}
	}
	for range 2 {
		if got := f.plainStatus(t, a); got != http.StatusTooManyRequests {
			t.Fatalf("a request past the burst: %d, want 429", got)
		}
	}
	if n := f.logs.count(RefusedRateLimited); n != 1 {
		t.Errorf("%d log lines for a run of two refusals, want 1", n)
	}

	gb, _ := f.credential(t, "rb")
	b := f.client(t, gb)
	for i := range 3 {
		if got := f.plainStatus(t, b); got != http.StatusOK {
			t.Fatalf("another grant's request %d: %d; it shares the first grant's bucket", i+1, got)
		}
	}

	f.clock.add(time.Second) // one token back
	if got := f.plainStatus(t, a); got != http.StatusOK {
		t.Fatalf("after a second: %d, want the refilled token", got)
	}
	if got := f.plainStatus(t, a); got != http.StatusTooManyRequests {
		t.Fatalf("a second request after a second: %d, want 429", got)
	}
	if n := f.logs.count(RefusedRateLimited); n != 2 {
		t.Errorf("%d log lines for two runs of refusals, want 2", n)
	}

	rec, _ := f.rec.Get(ga.Key())
	want := []Destination{{Host: "allowed.test", Port: f.plainPort, Allowed: 4, Refused: 3, Reason: RefusedRateLimited}}
	if diff := cmp.Diff(want, rec.Destinations); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

// A CONNECT and a plain-HTTP request each take a token from the same bucket.
func TestProxyRateLimitConnectAndPlain(t *testing.T) {
	f := newRateFixture(t, 3)
	g, cred := f.credential(t, "rc")
	c := f.client(t, g)
	if status := f.connectStatus(t, cred); !strings.Contains(status, " 200 ") {
		t.Fatalf("first tunnel: %q", status)
	}
	if got := f.plainStatus(t, c); got != http.StatusOK {
		t.Fatalf("plain request: %d", got)
	}
	if status := f.connectStatus(t, cred); !strings.Contains(status, " 200 ") {
		t.Fatalf("second tunnel: %q", status)
	}
	if status := f.connectStatus(t, cred); !strings.Contains(status, " 429 ") {
		t.Fatalf("a tunnel past the burst: %q, want 429", status)
	}
	if got := f.plainStatus(t, c); got != http.StatusTooManyRequests {
		t.Fatalf("a plain request past the burst: %d, want 429", got)
	}
	rec, _ := f.rec.Get(g.Key())
	want := []Destination{
		{Host: "allowed.test", Port: f.port, Allowed: 2, Refused: 1, Reason: RefusedRateLimited},
		{Host: "allowed.test", Port: f.plainPort, Allowed: 1, Refused: 1, Reason: RefusedRateLimited},
	}
	if f.port > f.plainPort {
		want[0], want[1] = want[1], want[0]
	}
	if diff := cmp.Diff(want, rec.Destinations); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

func testGrant(uid string, expires time.Time) Grant {
	return Grant{Namespace: "ns", Call: "c-" + uid, UID: uid, Attempt: 1, Expires: expires.Unix()}
}

// Buckets are dropped when their grant expires, when full and unused for bucketIdle (not
// when unused but still draining), and the least recent first beyond max.
func TestBucketsDropped(t *testing.T) {
	clock := newFakeClock(time.Unix(1_000_000, 0))
	later := clock.at(time.Hour)

	t.Run("idle and full", func(t *testing.T) {
		b := newBuckets(1, 2, 10)
		b.take(testGrant("a", later), clock.now())
		b.take(testGrant("b", later), clock.now())
		if n := b.size(); n != 2 {
			t.Fatalf("%d buckets, want 2", n)
		}
		b.take(testGrant("c", later), clock.at(bucketIdle-time.Second))
		if n := b.size(); n != 3 {
			t.Fatalf("%d buckets before bucketIdle, want 3", n)
		}
		b.take(testGrant("c", later), clock.at(bucketIdle+sweepEvery))
		if n := b.size(); n != 1 {
			t.Fatalf("%d buckets after bucketIdle, want 1 (c's)", n)
		}
	})
	t.Run("idle but draining", func(t *testing.T) {
		b := newBuckets(0.001, 2, 10) // a token in 1000 s: still short after bucketIdle
		slow := testGrant("slow", later)
		b.take(slow, clock.now())
		b.take(testGrant("x", later), clock.at(bucketIdle+sweepEvery))
		if n := b.size(); n != 2 {
			t.Fatalf("%d buckets, want 2: the bucket that is not yet full is kept", n)
		}
		b.take(slow, clock.at(bucketIdle+sweepEvery))
		if ok, _ := b.take(slow, clock.at(bucketIdle+sweepEvery)); ok {
			t.Error("a kept bucket refilled: it was dropped and made again")
		}
	})
	t.Run("expired grant", func(t *testing.T) {
		b := newBuckets(1, 2, 10)
		soon := testGrant("soon", clock.at(time.Minute))
		b.take(soon, clock.now())
		b.take(soon, clock.at(50*time.Second))
		b.take(testGrant("y", later), clock.at(90*time.Second)) // used 40 s ago: not idle
		if n := b.size(); n != 1 {
			t.Fatalf("%d buckets, want 1: the expired grant's bucket is dropped", n)
		}
	})
	t.Run("max", func(t *testing.T) {
		b := newBuckets(1, 2, 3)
		for i, uid := range []string{"m0", "m1", "m2", "m3"} {
			b.take(testGrant(uid, later), clock.at(time.Duration(i)*time.Second))
		}
		b.mu.Lock()
		_, oldest := b.byKey[testGrant("m0", later).Key()]
		n := len(b.byKey)
		b.mu.Unlock()
		if n != 3 || oldest {
			t.Fatalf("%d buckets, m0's kept %v; want 3 without the least recent", n, oldest)
		}
	})
}

// take refuses past the burst, refills on the clock, and marks the first refusal of a run.
func TestBucketsTake(t *testing.T) {
	clock := newFakeClock(time.Unix(1_000_000, 0))
	b := newBuckets(2, 2, 10)
	g := testGrant("t", clock.at(time.Hour))
	type res struct{ OK, First bool }
	var got []res
	for _, d := range []time.Duration{0, 0, 0, 0, 500 * time.Millisecond, 500 * time.Millisecond} {
		ok, first := b.take(g, clock.at(d))
		got = append(got, res{ok, first})
	}
	want := []res{{true, false}, {true, false}, {false, true}, {false, false}, {true, false}, {false, true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("take (-want +got):\n%s", diff)
	}
}

// BenchmarkBucketsTake is the limiter's cost per request: 1000 grants, the clock moving a
// millisecond a request.
func BenchmarkBucketsTake(b *testing.B) {
	bk := newBuckets(DefaultRatePerSecond, DefaultBurst, maxAttempts)
	start := time.Unix(1_000_000, 0)
	grants := make([]Grant, 1000)
	for i := range grants {
		grants[i] = testGrant("g"+strconv.Itoa(i), start.Add(time.Hour))
	}
	i := 0
	for b.Loop() {
		bk.take(grants[i%len(grants)], start.Add(time.Duration(i)*time.Millisecond))
		i++
	}
}

// Forged credentials have no bucket; their refusals are logged at most once per
// badAuthLogEvery, the next line counting those held back.
func TestProxyForgedCredentialsLogSampled(t *testing.T) {
	f := newRateFixture(t, 3)
	pu := mustURL(f.proxy.URL)
	pu.User = url.UserPassword(ProxyUser, "forged.c2lnbmF0dXJl")
	tr := &http.Transport{Proxy: http.ProxyURL(pu)}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	send := func(n int) {
		t.Helper()
		for range n {
			if got := f.plainStatus(t, c); got != http.StatusProxyAuthRequired {
				t.Fatalf("a forged credential: %d, want 407", got)
			}
		}
	}
	send(50)
	if got := f.logs.count("refused a request"); got != 1 {
		t.Fatalf("%d log lines for 50 forged credentials in one instant, want 1", got)
	}
	f.clock.add(badAuthLogEvery - time.Millisecond)
	send(1)
	if got := f.logs.count("refused a request"); got != 1 {
		t.Fatalf("%d log lines before the interval passed, want 1", got)
	}
	f.clock.add(time.Millisecond)
	send(1)
	if got := f.logs.count("refused a request"); got != 2 {
		t.Fatalf("%d log lines after the interval, want 2", got)
	}
	if got := f.logs.count("alsoRefusedSinceLastLine=50"); got != 1 {
		t.Errorf("the second line does not count the 50 held back:\n%s", f.logs.buf.String())
	}
}
