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

// tenants holds one Gateway per identity that a client authenticated as: its own
// agentclient (impersonating the identity), its own tool list (RBAC and scope subjects
// differ per identity) and its own watches (three per identity). At most max are kept;
// one without sessions or calls in flight for idleAfter is stopped.
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
}

type tenant struct {
	g      *Gateway
	cancel context.CancelFunc
	used   time.Time
}

// get returns the identity's gateway, starting it on first use.
func (t *tenants) get(ctx context.Context, id *Identity) (*Gateway, error) {
	key := id.Key()
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
	g, err := New(gctx, opts)
	if err != nil {
		cancel()
		return nil, err
	}
	t.byKey[key] = &tenant{g: g, cancel: cancel, used: t.now()}
	return g, nil
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
	t.byKey[oldest].cancel()
	delete(t.byKey, oldest)
	return true
}

// sweep stops every gateway idle for idleAfter, until ctx ends.
func (t *tenants) sweep(ctx context.Context) {
	every := max(t.idleAfter/4, time.Second)
	for wait(ctx, every) {
		t.mu.Lock()
		for k, tn := range t.byKey {
			if tn.g.idle() && t.now().Sub(tn.used) > t.idleAfter {
				tn.cancel()
				delete(t.byKey, k)
			}
		}
		t.mu.Unlock()
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
