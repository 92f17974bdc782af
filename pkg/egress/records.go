package egress

import (
	"sort"
	"sync"
	"time"
)

// Refusal reasons, the only words a record's reason holds.
const (
	RefusedNotAllowed           = "NotAllowed"           // no rule of the grant matches host and port
	RefusedIPLiteral            = "IPLiteral"            // the destination was an address, not a name
	RefusedInvalidHost          = "InvalidHost"          // not a DNS name
	RefusedDeniedRange          = "DeniedRange"          // the name resolves into a denied range
	RefusedUnresolved           = "Unresolved"           // the name does not resolve
	RefusedBadRequest           = "BadRequest"           // no host, no port the proxy understands, or a tunnel's TLS or HTTP it cannot read
	RefusedTooManyTunnels       = "TooManyTunnels"       // the attempt holds Config.MaxTunnels tunnels open
	RefusedRateLimited          = "RateLimited"          // the attempt's token bucket is empty (Config.RatePerSecond, Burst)
	RefusedDialFailed           = "DialFailed"           // allowed, but the connection failed
	RefusedSNIMismatch          = "SNIMismatch"          // a tunnel's TLS ClientHello names no host, another host, or hides it (ECH)
	RefusedHostMismatch         = "HostMismatch"         // a request in a plain-HTTP tunnel names another host
	RefusedFirstTimeout         = "FirstMessageTimeout"  // a tunnel's first message was not complete in Config.FirstMessageTimeout
	RefusedGrantEnded           = "GrantEnded"           // the grant's attempt has ended (the operator collected its record)
	RefusedWrongPod             = "WrongPod"             // the grant is bound to another Pod's address than the request came from
	RefusedUnbound              = "Unbound"              // the grant was not bound to its Pod within Config.BindWait
	RefusedInjectionUnavailable = "InjectionUnavailable" // the destination has an injection but the proxy has no CA to terminate TLS
	RefusedInjectionNeedsTLS    = "InjectionNeedsTLS"    // plain HTTP (or a tunnel that does not start TLS) to a destination with an injection
	RefusedUpstreamUntrusted    = "UpstreamUntrusted"    // a terminated tunnel's destination presented a certificate that does not verify
	InvalidHost                 = "(invalid)"            // recorded in place of a host that is not a name
	MaxDestinations             = 32                     // destinations kept per attempt; more are Omitted
	maxAttempts                 = 10000                  // attempts kept in memory
	keepAfterExpiry             = 10 * time.Minute       // records outlive their grant by this much
	recordsPath                 = "/records/"            // GET /records/<uid>/<attempt>
	recordsContentType          = "application/json"     // of the records endpoint's answer
)

// RefusalReasons are every reason a record's destination may hold, for its reader to check.
func RefusalReasons() []string {
	return []string{RefusedNotAllowed, RefusedIPLiteral, RefusedInvalidHost, RefusedDeniedRange, RefusedUnresolved,
		RefusedBadRequest, RefusedTooManyTunnels, RefusedRateLimited, RefusedDialFailed, RefusedSNIMismatch,
		RefusedHostMismatch, RefusedFirstTimeout, RefusedGrantEnded, RefusedWrongPod, RefusedUnbound,
		RefusedInjectionUnavailable, RefusedInjectionNeedsTLS, RefusedUpstreamUntrusted}
}

// Destination counts what one attempt asked for at one host and port.
type Destination struct {
	Host    string `json:"host"`
	Port    int32  `json:"port"`
	Allowed int32  `json:"allowed,omitempty"`
	Refused int32  `json:"refused,omitempty"`
	// Reason is the last refusal's reason (one of the Refused* words).
	Reason string `json:"reason,omitempty"`
}

// Record is what the proxy saw of one attempt: destinations sorted by host and port,
// never content.
type Record struct {
	Destinations []Destination `json:"destinations,omitempty"`
	// Omitted counts requests to destinations beyond MaxDestinations.
	Omitted int32 `json:"omitted,omitempty"`
	// ProxyStarted (Unix seconds) is when the proxy that answers started: a record of an
	// attempt that started before it lost what the previous proxy saw.
	ProxyStarted int64 `json:"proxyStarted"`
}

// Recorder keeps the records of the attempts the proxy serves, bounded in count and time.
type Recorder struct {
	mu      sync.Mutex
	now     func() time.Time
	started time.Time
	entries map[string]*entry
	ended   endedGrants
	pods    bindings
	onEnd   []func(key string)
}

type entry struct {
	record  Record
	index   map[Destination]int // key: host and port only
	expires time.Time
}

// NewRecorder returns an empty recorder on the given clock.
func NewRecorder(now func() time.Time) *Recorder {
	return &Recorder{now: now, started: now(), entries: map[string]*entry{}, ended: endedGrants{until: map[string]int64{}},
		pods: bindings{pods: map[string]boundPod{}, changed: make(chan struct{})}}
}

// Note records one request of grant g to host:port: allowed, or refused for reason.
func (r *Recorder) Note(g Grant, host string, port int32, refusal string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := g.Key()
	e := r.entries[key]
	if e == nil {
		r.evict()
		if len(r.entries) >= maxAttempts {
			return
		}
		e = &entry{index: map[Destination]int{}}
		r.entries[key] = e
	}
	e.expires = time.Unix(g.Expires, 0).Add(keepAfterExpiry)
	id := Destination{Host: host, Port: port}
	i, ok := e.index[id]
	if !ok {
		if len(e.record.Destinations) >= MaxDestinations {
			e.record.Omitted++
			return
		}
		i = len(e.record.Destinations)
		e.index[id] = i
		e.record.Destinations = append(e.record.Destinations, id)
	}
	d := &e.record.Destinations[i]
	if refusal == "" {
		d.Allowed++
	} else {
		d.Refused++
		d.Reason = refusal
	}
}

// Get returns a copy of an attempt's record, sorted; ok is false when the proxy saw nothing.
func (r *Recorder) Get(key string) (Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[key]
	if !ok {
		return Record{ProxyStarted: r.started.Unix()}, false
	}
	out := Record{Omitted: e.record.Omitted, ProxyStarted: r.started.Unix(), Destinations: append([]Destination(nil), e.record.Destinations...)}
	sort.Slice(out.Destinations, func(i, j int) bool {
		a, b := out.Destinations[i], out.Destinations[j]
		return a.Host < b.Host || a.Host == b.Host && a.Port < b.Port
	})
	return out, true
}

// evict drops expired records; called with mu held.
func (r *Recorder) evict() {
	now := r.now()
	for k, e := range r.entries {
		if now.After(e.expires) {
			delete(r.entries, k)
		}
	}
}
