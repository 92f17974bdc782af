package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// progressEvery is how often a request that waits on a call sends progress while nothing
// changes: well under the 60 s a default TypeScript SDK client waits, so that its
// resetTimeoutOnProgress keeps the request alive.
const progressEvery = 10 * time.Second

// progress sends notifications/progress for one request that carries a progressToken: on
// each change of the call's phase, and every progressEvery while it waits. A nil progress
// (no token, no session) sends nothing.
type progress struct {
	ss    *mcp.ServerSession
	token any
	every time.Duration

	mu    sync.Mutex
	n     float64
	phase v1alpha1.ToolCallPhase
	call  *v1alpha1.ToolCall
}

func newProgress(ss *mcp.ServerSession, token any, every time.Duration) *progress {
	if ss == nil || token == nil {
		return nil
	}
	return &progress{ss: ss, token: token, every: every}
}

// observe notes a version of the call and notifies when its phase changed.
func (p *progress) observe(ctx context.Context, call *v1alpha1.ToolCall) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.call = call
	changed := phaseOf(call) != p.phase
	p.phase = phaseOf(call)
	p.mu.Unlock()
	if changed {
		p.notify(ctx, call)
	}
}

// run notifies every p.every until ctx ends; start it in its own goroutine.
func (p *progress) run(ctx context.Context) {
	if p == nil {
		return
	}
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.mu.Lock()
			call := p.call
			p.mu.Unlock()
			if call != nil {
				p.notify(ctx, call)
			}
		}
	}
}

// notify sends one notification: the call's phase, and for a call awaiting approval who
// answers it how. A failure (the client has gone) is the SDK's to log.
func (p *progress) notify(ctx context.Context, call *v1alpha1.ToolCall) {
	p.mu.Lock()
	p.n++
	n := p.n
	p.mu.Unlock()
	msg := fmt.Sprintf("The call %s is %s.", call.Name, phaseOf(call))
	if call.Status.Phase == v1alpha1.PhaseAwaitingApproval {
		msg = approvalText(call)
	}
	_ = p.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: n, Message: msg})
}
