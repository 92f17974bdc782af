package egress

import (
	"io"
	"sync"
	"time"
)

// tunnels holds each attempt's open CONNECT tunnels (passed through, tunnelConn, or
// terminated, interceptedTunnel): at most max at once, and all of them closed when the
// attempt's grant ends.
type tunnels struct {
	mu   sync.Mutex
	open map[string]map[io.Closer]struct{}
	max  int
}

// add takes a slot for tn in attempt key, or reports there is none; the release it returns
// gives the slot back (tn's Close calls it).
func (t *tunnels) add(key string, tn io.Closer) (release func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.open[key]) >= t.max {
		return nil, false
	}
	if t.open[key] == nil {
		t.open[key] = map[io.Closer]struct{}{}
	}
	t.open[key][tn] = struct{}{}
	return func() { t.remove(key, tn) }, true
}

func (t *tunnels) remove(key string, tn io.Closer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.open[key], tn)
	if len(t.open[key]) == 0 {
		delete(t.open, key)
	}
}

// closeAll closes every tunnel of an attempt (its grant has ended).
func (t *tunnels) closeAll(key string) {
	t.mu.Lock()
	var all []io.Closer
	for tn := range t.open[key] {
		all = append(all, tn)
	}
	t.mu.Unlock()
	for _, tn := range all {
		_ = tn.Close()
	}
}

// badAuthLogEvery is how often at most a refused credential is logged: no valid grant means
// no bucket, so a body sending forged credentials as fast as it can must not turn each into
// a log line.
const badAuthLogEvery = 10 * time.Second

// sampledLog lets one line through per badAuthLogEvery and counts the ones it held back.
type sampledLog struct {
	mu   sync.Mutex
	last time.Time
	held int
}

// take reports whether to log at now, and how many were held back since the last line.
func (l *sampledLog) take(now time.Time) (held int, log bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < badAuthLogEvery {
		l.held++
		return 0, false
	}
	held, l.held, l.last = l.held, 0, now
	return held, true
}
