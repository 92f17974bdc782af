package gateway

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/agentclient"
)

// recheckParkedEvery bounds how often a user at the parked bound has their parked calls
// read again: a client retrying at the bound costs the API server one round of GETs per
// interval, not one per request.
const recheckParkedEvery = 2 * time.Second

// limits bound what one user holds at once, whichever of their tokens and sessions they use:
// tools/calls in flight (slots), and calls parked for approval. A parked call's tools/call
// has returned and freed its slot, but the call waits in the cluster and is announced to
// every approval sink, so those are counted apart.
type limits struct {
	slots     chan struct{} // nil: no bound
	maxParked int           // 0: no bound

	mu        sync.Mutex
	parked    map[string]struct{} // names of the user's calls this gateway saw park
	recheckAt time.Time
	// refs counts the gateways sharing these limits (tenants); lastClient reads the
	// parked calls once none is left.
	refs       int
	lastClient *agentclient.Client
}

func newLimits(calls, parked int) *limits {
	l := &limits{maxParked: parked, parked: map[string]struct{}{}}
	if calls > 0 {
		l.slots = make(chan struct{}, calls)
	}
	return l
}

// acquire takes a call slot, if one is free (always, without a bound).
func (l *limits) acquire() bool {
	if l.slots == nil {
		return true
	}
	select {
	case l.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (l *limits) release() {
	if l.slots != nil {
		<-l.slots
	}
}

// roomToPark reports whether the user may make another call under the parked bound and how
// many calls are parked. At the bound it first reads the parked calls again (at most every
// recheckParkedEvery) and forgets those answered or gone. Calls already in flight may still
// park: the bound is maxParked plus the calls in flight when it was reached.
func (l *limits) roomToPark(ctx context.Context, c *agentclient.Client) (bool, int) {
	if l.maxParked <= 0 {
		return true, 0
	}
	l.mu.Lock()
	n, due := len(l.parked), time.Now().After(l.recheckAt)
	if n < l.maxParked || !due {
		l.mu.Unlock()
		return n < l.maxParked, n
	}
	l.recheckAt = time.Now().Add(recheckParkedEvery)
	l.mu.Unlock()
	l.recheck(ctx, c)
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.parked) < l.maxParked, len(l.parked)
}

// recheck forgets the parked calls that no longer await approval, as c reads them.
func (l *limits) recheck(ctx context.Context, c *agentclient.Client) {
	for _, name := range l.parkedNames() {
		call, err := c.Get(ctx, name)
		if err == nil && agentclient.AwaitingApproval(call) || err != nil && !apierrors.IsNotFound(err) {
			continue // still parked, or unknown: keep counting it
		}
		l.mu.Lock()
		delete(l.parked, name)
		l.mu.Unlock()
	}
}

func (l *limits) parkedNames() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := make([]string, 0, len(l.parked))
	for name := range l.parked {
		names = append(names, name)
	}
	return names
}

// park records a call that parked for approval.
func (l *limits) park(call *v1alpha1.ToolCall) {
	if l.maxParked <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parked[call.Name] = struct{}{}
}

// parkedCount is the number of parked calls counted.
func (l *limits) parkedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.parked)
}
