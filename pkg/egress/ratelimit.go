package egress

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of Config.RatePerSecond and Config.Burst (and of the proxy's --rate and --burst).
// A bucket is charged per CONNECT and per plain-HTTP request, never per request inside a
// tunnel, so a client that reuses its connections (git, pip, Go, curl with keep-alive) costs
// a handful of tokens for a whole clone or install. The burst is above MaxTunnels' default
// (64): a client that opens its whole pool at once (npm's sockets, a parallel fetcher) or a
// few dozen API calls that each open a new connection pass without a wait. 20 a second after
// that is 1200 new connections or plain requests a minute, far more than a tool needs and
// about what a single hostile body may cost the proxy in name lookups and dials.
const (
	DefaultRatePerSecond = 20
	DefaultBurst         = 100
)

const (
	// bucketIdle is how long a full bucket stays unused before it is dropped; a full bucket
	// is what a new one would be, so dropping it costs its grant nothing.
	bucketIdle = 2 * time.Minute
	// sweepEvery is how often (on the proxy's clock) a request also drops the buckets of
	// expired grants and idle ones.
	sweepEvery = 30 * time.Second
)

// buckets is a token bucket per grant (per attempt: Grant.Key). The number of buckets is
// bounded three ways: only a grant the operator signed and that has not expired gets one
// (so at most the attempts running, plus their expiry margin); a bucket is dropped when its
// grant expires or when it has been full and unused for bucketIdle; and there are at most
// max, the least recently used dropped first when a new grant would pass that.
type buckets struct {
	mu        sync.Mutex
	limit     rate.Limit
	burst     int
	max       int
	byKey     map[string]*bucket
	nextSweep time.Time
}

type bucket struct {
	lim      *rate.Limiter
	used     time.Time // the last request, allowed or not
	expires  int64     // the grant's Expires (Unix seconds)
	refusing bool      // the last request was refused
}

func newBuckets(perSecond float64, burst, maxBuckets int) *buckets {
	return &buckets{limit: rate.Limit(perSecond), burst: burst, max: maxBuckets, byKey: map[string]*bucket{}}
}

// take charges one request of g at now: ok when the grant's bucket had a token; first when
// it had none but the request before had one (the start of a run of refusals, the one
// refusal worth a log line).
func (b *buckets) take(g Grant, now time.Time) (ok, first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !now.Before(b.nextSweep) {
		b.sweep(now)
	}
	key := g.Key()
	k := b.byKey[key]
	if k == nil {
		if len(b.byKey) >= b.max {
			b.sweep(now)
			if len(b.byKey) >= b.max {
				b.dropLeastRecent()
			}
		}
		k = &bucket{lim: rate.NewLimiter(b.limit, b.burst)}
		b.byKey[key] = k
	}
	k.used, k.expires = now, max(k.expires, g.Expires)
	ok = k.lim.AllowN(now, 1)
	first = !ok && !k.refusing
	k.refusing = !ok
	return ok, first
}

// sweep drops the buckets of expired grants (Verify refuses them, so they are never charged
// again) and those full and unused for bucketIdle; called with mu held.
func (b *buckets) sweep(now time.Time) {
	b.nextSweep = now.Add(sweepEvery)
	for key, k := range b.byKey {
		if now.Unix() > k.expires || (now.Sub(k.used) >= bucketIdle && k.lim.TokensAt(now) >= float64(b.burst)) {
			delete(b.byKey, key)
		}
	}
}

// dropLeastRecent makes room when max grants are all live: only the operator signs grants,
// so a body cannot force this on another attempt's bucket; called with mu held.
func (b *buckets) dropLeastRecent() {
	var oldest string
	var at time.Time
	for key, k := range b.byKey {
		if oldest == "" || k.used.Before(at) {
			oldest, at = key, k.used
		}
	}
	delete(b.byKey, oldest)
}

// size is the number of buckets held (for tests).
func (b *buckets) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.byKey)
}
