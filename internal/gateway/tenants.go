package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/toolgate/toolgate/pkg/agentclient"
)

// errTooManyIdentities is returned when every identity slot is busy.
var errTooManyIdentities = errors.New("the gateway serves as many identities as it may at once")

// tenants holds one Gateway per user that a client authenticated as (tokenauth's UserKey:
// every token of one ServiceAccount is one user): its own agentclient (impersonating the
// user), its own tool list (RBAC and scope subjects differ per user) and its own watches
// (three per user); each call is made as the very token that asked (callers). At most max
// are kept; one without sessions or calls in flight for idleAfter is stopped. The limits on
// calls in flight and parked calls are per username, shared by all of a user's gateways.
type tenants struct {
	base      Options // Client is the gateway's own (for the namespace)
	cfg       *rest.Config
	extras    []string
	max       int
	idleAfter time.Duration
	ctx       context.Context
	now       func() time.Time

	mu    sync.Mutex
	byKey map[string]*tenant
	// limits by username; an entry outlives its gateways while calls it counts are parked.
	limits map[string]*limits
}

type tenant struct {
	g      *Gateway
	cancel context.CancelFunc
	used   time.Time
	user   string
}

// get returns the user's gateway, starting it on first use.
func (t *tenants) get(ctx context.Context, id *Identity) (*Gateway, error) {
	key := id.UserKey()
	t.mu.Lock()
	defer t.mu.Unlock()
	if tn := t.byKey[key]; tn != nil {
		tn.used = t.now()
		return tn.g, nil
	}
	if len(t.byKey) >= t.max && !t.evictOne() {
		return nil, errTooManyIdentities
	}
	// Creating holds the lock (a SelfSubjectReview and three LISTs): new identities are
	// rare, and two requests of one new identity must not start two gateways.
	ac, err := agentclient.New(ctx, id.Impersonate(t.cfg, t.extras), t.base.Client.Namespace)
	if err != nil {
		return nil, fmt.Errorf("acting as %s: %w", id.Username, err)
	}
	gctx, cancel := context.WithCancel(t.ctx)
	opts := t.base
	opts.Client = ac
	opts.Logger = t.base.Logger.WithValues("user", id.Username)
	opts.limits = t.limitsOf(id.Username, ac)
	opts.callers = newCallers(t.cfg, t.extras, ac)
	g, err := New(gctx, opts)
	if err != nil {
		cancel()
		t.unref(id.Username)
		return nil, err
	}
	t.byKey[key] = &tenant{g: g, cancel: cancel, used: t.now(), user: id.Username}
	return g, nil
}

// limitsOf returns the username's limits, counting one more gateway sharing them; t.mu is
// held.
func (t *tenants) limitsOf(user string, ac *agentclient.Client) *limits {
	l := t.limits[user]
	if l == nil {
		l = newLimits(t.base.MaxCalls, t.base.MaxParked)
		t.limits[user] = l
	}
	l.refs++
	l.lastClient = ac
	return l
}

// unref counts one gateway fewer sharing user's limits, and drops them when none is left
// and no call they count is parked; t.mu is held.
func (t *tenants) unref(user string) {
	l := t.limits[user]
	if l == nil {
		return
	}
	if l.refs--; l.refs <= 0 && l.parkedCount() == 0 {
		delete(t.limits, user)
	}
}

// stop stops the gateway of key; t.mu is held.
func (t *tenants) stop(key string) {
	tn := t.byKey[key]
	tn.cancel()
	delete(t.byKey, key)
	t.unref(tn.user)
}

// evictOne stops the longest-unused idle gateway; t.mu is held.
func (t *tenants) evictOne() bool {
	var oldest string
	for k, tn := range t.byKey {
		if tn.g.idle() && (oldest == "" || tn.used.Before(t.byKey[oldest].used)) {
			oldest = k
		}
	}
	if oldest == "" {
		return false
	}
	t.stop(oldest)
	return true
}

// sweep stops every gateway idle for idleAfter, until ctx ends.
func (t *tenants) sweep(ctx context.Context) {
	every := max(t.idleAfter/4, time.Second)
	for wait(ctx, every) {
		t.mu.Lock()
		for k, tn := range t.byKey {
			if tn.g.idle() && t.now().Sub(tn.used) > t.idleAfter {
				t.stop(k)
			}
		}
		var orphans []orphan
		for _, l := range t.limits {
			if l.refs <= 0 {
				orphans = append(orphans, orphan{l, l.lastClient})
			}
		}
		t.mu.Unlock()
		t.forgetAnswered(ctx, orphans)
	}
}

// orphan is the limits of a user without a gateway, and the user's last client.
type orphan struct {
	l *limits
	c *agentclient.Client
}

// forgetAnswered reads again the parked calls of users without a gateway and drops the
// limits of those with none left parked.
func (t *tenants) forgetAnswered(ctx context.Context, orphans []orphan) {
	for _, o := range orphans {
		o.l.recheck(ctx, o.c)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for user, l := range t.limits {
		if l.refs <= 0 && l.parkedCount() == 0 {
			delete(t.limits, user)
		}
	}
}

// count is the number of identities served.
func (t *tenants) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey)
}

// wait for the calls of every gateway.
func (t *tenants) waitCalls() {
	t.mu.Lock()
	gs := make([]*Gateway, 0, len(t.byKey))
	for _, tn := range t.byKey {
		gs = append(gs, tn.g)
	}
	t.mu.Unlock()
	for _, g := range gs {
		g.calls.Wait()
	}
}
