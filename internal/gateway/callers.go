package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/pkg/agentclient"
)

// maxCallersPerUser bounds the per-token clients one user's gateway keeps; the one used
// longest ago goes first (a client is cheap to make again: no API call).
const maxCallersPerUser = 64

// callers are the per-token clients of one user's gateway. The gateway (its tool list and
// watches) is the user's, shared by all their tokens; a call is created, watched and
// cancelled as exactly the token that asked, so that the API server's audit names that
// token (its credential-id, its Pod) rather than the one that started the gateway.
type callers struct {
	cfg    *rest.Config // the gateway's own connection: impersonation is added per token
	extras []string
	base   *agentclient.Client // the user's: its scheme, REST mapper and namespace are shared

	mu    sync.Mutex
	byKey map[string]*caller
}

type caller struct {
	c    *agentclient.Client
	used time.Time
}

func newCallers(cfg *rest.Config, extras []string, base *agentclient.Client) *callers {
	return &callers{cfg: cfg, extras: extras, base: base, byKey: map[string]*caller{}}
}

// clientFor is the client of the token that authenticated ctx's request; without one (stdio,
// tests) it is def.
func (cs *callers) clientFor(ctx context.Context, def *agentclient.Client) (*agentclient.Client, error) {
	id := identityOf(ctx)
	if cs == nil || id == nil {
		return def, nil
	}
	key := id.Key()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c := cs.byKey[key]; c != nil {
		c.used = time.Now()
		return c.c, nil
	}
	cfg := id.Impersonate(cs.cfg, cs.extras)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("acting as %s: %w", id.Username, err)
	}
	cl, err := client.NewWithWatch(cfg, client.Options{Scheme: cs.base.C.Scheme(), Mapper: cs.base.C.RESTMapper(), HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("acting as %s: %w", id.Username, err)
	}
	if len(cs.byKey) >= maxCallersPerUser {
		cs.evictOldest()
	}
	// The username is the TokenReview's, which is what the API server sees impersonated:
	// no SelfSubjectReview needed.
	c := &agentclient.Client{C: cl, Namespace: cs.base.Namespace, Identity: id.Username}
	cs.byKey[key] = &caller{c: c, used: time.Now()}
	return c, nil
}

// evictOldest drops the client used longest ago; cs.mu is held.
func (cs *callers) evictOldest() {
	var oldest string
	for k, c := range cs.byKey {
		if oldest == "" || c.used.Before(cs.byKey[oldest].used) {
			oldest = k
		}
	}
	delete(cs.byKey, oldest)
}
