package toolcall

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// written remembers how far the reconciler itself moved each call, so that a reconcile
// woken by another event (a Job's, a Pod's) while the informer cache still holds an older
// status does not redo a pass the API server has already recorded (its write would only
// be refused with a conflict). Status only moves forward, so "behind" is well defined.
type written struct {
	mu    sync.Mutex
	calls map[types.UID]progress
}

type progress struct {
	rank     int
	attempts int
}

func progressOf(call *v1alpha1.ToolCall) progress {
	rank := 0
	switch p := call.Status.Phase; {
	case p.IsTerminal():
		rank = 3
	case p == v1alpha1.PhaseRunning:
		rank = 2
	case p == v1alpha1.PhaseAwaitingApproval || p == v1alpha1.PhaseQueued:
		rank = 1
	}
	return progress{rank: rank, attempts: len(call.Status.Attempts)}
}

func (p progress) before(q progress) bool {
	return p.rank < q.rank || (p.rank == q.rank && p.attempts < q.attempts)
}

// record notes the status this reconciler just wrote.
func (w *written) record(call *v1alpha1.ToolCall) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls == nil {
		w.calls = map[types.UID]progress{}
	}
	w.calls[call.UID] = progressOf(call)
}

// stale reports whether the cached call is behind what this reconciler wrote; once the
// cache has caught up the entry is dropped.
func (w *written) stale(call *v1alpha1.ToolCall) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.calls[call.UID]
	if !ok {
		return false
	}
	if progressOf(call).before(p) {
		return true
	}
	delete(w.calls, call.UID)
	return false
}
