package egress

import (
	"context"
	"errors"
	"net/netip"
	"time"
)

const (
	// maxBindings bounds the bound attempts the proxy remembers (an entry is a key, an
	// address and an expiry, about the size of an ended grant's); past it the binding nearest
	// its expiry is forgotten first (its grant's requests are then refused Unbound).
	maxBindings = 100_000
	// maxBindingAge is how long a binding lives before a request of its grant (which carries
	// the signed expiry) is seen: the longest tool timeout (24 h) and the grant's margin.
	maxBindingAge = 25 * time.Hour
	// maxBindWaiters bounds the requests waiting for their grant's binding at once; past it
	// a request of an unbound grant is refused at once.
	maxBindWaiters = 4096
)

// ErrBoundElsewhere is Bind's answer for an attempt already bound to another address.
var ErrBoundElsewhere = errors.New("the attempt's grant is bound to another Pod address")

// bindings remembers the Pod address each attempt's grant works from. It lives in memory
// only: a proxy that restarts forgets them, and refuses the grants of running attempts
// (Unbound) until the operator binds them again.
type bindings struct {
	pods      map[string]boundPod
	changed   chan struct{} // closed and replaced by every Bind: waiters look again
	nextPrune time.Time
	onWait    func(key string) // test hook: a request starts waiting for key's binding
}

type boundPod struct {
	addr  netip.Addr
	until int64 // Unix seconds: the grant's expiry once seen, else the bind's time + maxBindingAge
}

// Bind binds the grant of attempt key to the Pod address addr: from then on the proxy lets
// its requests through only from addr. Binding the same address again is a no-op; another
// address is ErrBoundElsewhere. An attempt whose grant has ended is not bound.
func (r *Recorder) Bind(key string, addr netip.Addr) error {
	addr = addr.Unmap()
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	b := &r.pods
	if cur, ok := b.pods[key]; ok && now.Unix() <= cur.until {
		if cur.addr != addr {
			return ErrBoundElsewhere
		}
		return nil
	}
	if r.ended.has(key, now) {
		return nil
	}
	if len(b.pods) >= maxBindings || !now.Before(b.nextPrune) {
		b.prune(now)
	}
	if len(b.pods) >= maxBindings {
		b.dropNearest()
	}
	b.pods[key] = boundPod{addr: addr, until: now.Add(maxBindingAge).Unix()}
	close(b.changed)
	b.changed = make(chan struct{})
	return nil
}

// boundPod returns the address g's attempt is bound to, or the channel the next Bind
// closes; a binding seen through its grant lives until the grant's expiry.
func (r *Recorder) boundPod(g Grant) (netip.Addr, bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := g.Key()
	cur, ok := r.pods.pods[key]
	if !ok || r.now().Unix() > cur.until {
		return netip.Addr{}, false, r.pods.changed
	}
	if cur.until != g.Expires {
		cur.until = g.Expires
		r.pods.pods[key] = cur
	}
	return cur.addr, true, nil
}

func (b *bindings) prune(now time.Time) {
	b.nextPrune = now.Add(endedPruneEvery)
	for k, p := range b.pods {
		if now.Unix() > p.until {
			delete(b.pods, k)
		}
	}
}

func (b *bindings) dropNearest() {
	var nearest string
	for k, p := range b.pods {
		if nearest == "" || p.until < b.pods[nearest].until {
			nearest = k
		}
	}
	delete(b.pods, nearest)
}

// podRefusal is why a request of g from source address remote is refused for its Pod:
// WrongPod when its grant is bound to another address, Unbound when it is not bound within
// Config.BindWait; "" when it may pass (or binding is not required, BindWait 0).
func (p *proxy) podRefusal(ctx context.Context, g Grant, remote string) string {
	if p.cfg.BindWait <= 0 {
		return ""
	}
	src, err := netip.ParseAddrPort(remote)
	if err != nil {
		return RefusedWrongPod
	}
	addr, bound, changed := p.cfg.Recorder.boundPod(g)
	if !bound {
		if addr, bound = p.waitBound(ctx, g, changed); !bound {
			return RefusedUnbound
		}
	}
	if addr != src.Addr().Unmap() {
		return RefusedWrongPod
	}
	return ""
}

// waitBound waits up to Config.BindWait for g's attempt to be bound; changed is the channel
// the next Bind closes.
func (p *proxy) waitBound(ctx context.Context, g Grant, changed <-chan struct{}) (netip.Addr, bool) {
	if p.bindWaiters.Add(1) > maxBindWaiters {
		p.bindWaiters.Add(-1)
		return netip.Addr{}, false
	}
	defer p.bindWaiters.Add(-1)
	t := time.NewTimer(p.cfg.BindWait)
	defer t.Stop()
	if hook := p.cfg.Recorder.waitHook(); hook != nil {
		hook(g.Key())
	}
	for {
		select {
		case <-changed:
		case <-t.C:
			return netip.Addr{}, false
		case <-ctx.Done():
			return netip.Addr{}, false
		}
		var addr netip.Addr
		var bound bool
		if addr, bound, changed = p.cfg.Recorder.boundPod(g); bound {
			return addr, true
		}
	}
}

func (r *Recorder) waitHook() func(string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pods.onWait
}
