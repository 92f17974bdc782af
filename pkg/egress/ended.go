package egress

import "time"

// maxEnded bounds the ended grants the proxy remembers. An entry is an attempt's key and an
// expiry, about 85 bytes with the map's own (8.3 MB measured for 100 000). Only the operator ends
// grants (one per attempt of a tool with sandbox.egress, on the records port), and an entry
// is dropped when its grant expires (its attempt's deadline plus a minute), so the bound is
// reached only by 100 000 such attempts ending within one tool timeout (24 h at most).
const maxEnded = 100_000

// endedPruneEvery is how often (on the proxy's clock) an End also drops the expired entries.
const endedPruneEvery = time.Minute

// endedGrants remembers the grants whose attempt has ended before the grant expired: the
// proxy refuses them (GrantEnded) until their signed expiry, after which Verify does. It lives
// in memory only: a proxy that restarts forgets them, and each then works until its expiry.
type endedGrants struct {
	until     map[string]int64 // attempt key → the grant's expiry (Unix seconds)
	nextPrune time.Time
}

// add remembers key until the Unix second until; past maxEnded, the entry nearest its expiry
// is forgotten first (its grant then works for the least time).
func (e *endedGrants) add(key string, until int64, now time.Time) {
	if len(e.until) >= maxEnded || !now.Before(e.nextPrune) {
		e.prune(now)
	}
	if _, ok := e.until[key]; !ok && len(e.until) >= maxEnded {
		e.dropNearest()
	}
	e.until[key] = max(until, e.until[key])
}

// has reports whether key's grant has ended and not yet expired.
func (e *endedGrants) has(key string, now time.Time) bool {
	until, ok := e.until[key]
	return ok && now.Unix() <= until
}

func (e *endedGrants) prune(now time.Time) {
	e.nextPrune = now.Add(endedPruneEvery)
	for k, until := range e.until {
		if now.Unix() > until {
			delete(e.until, k)
		}
	}
}

func (e *endedGrants) dropNearest() {
	var nearest string
	for k, until := range e.until {
		if nearest == "" || until < e.until[nearest] {
			nearest = k
		}
	}
	delete(e.until, nearest)
}

// End ends the grant of an attempt: from now on the proxy refuses it (GrantEnded, 407) and
// closes the tunnels it holds open, until the grant's own expiry (until, Unix seconds, as
// the operator signed it; a later expiry the proxy saw on the grant wins). It returns the
// attempt's record, final from then on.
func (r *Recorder) End(key string, until int64) Record {
	r.mu.Lock()
	now := r.now()
	if e := r.entries[key]; e != nil {
		until = max(until, e.expires.Add(-keepAfterExpiry).Unix())
	}
	r.ended.add(key, until, now)
	delete(r.pods.pods, key) // an ended grant is refused wherever it comes from
	hooks := r.onEnd
	r.mu.Unlock()
	for _, h := range hooks {
		h(key)
	}
	rec, _ := r.Get(key)
	return rec
}

// Ended reports whether key's grant was ended (and has not expired since).
func (r *Recorder) Ended(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ended.has(key, r.now())
}

// OnEnd registers f to run after each End (the proxy closes the attempt's tunnels).
func (r *Recorder) OnEnd(f func(key string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onEnd = append(r.onEnd, f)
}
