package executor

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// Aside is the work an executor runs aside of its calls' reconciles (a handover that
// returns when the body ended), by call uid, in this process's memory only: each call's
// work starts once, and its end wakes the call's reconcile on Wakeups (the executor's
// WakeSource channel). R is what the work returns, N what the executor notes of a run
// besides.
type Aside[R, N any] struct {
	mu     sync.Mutex
	runs   map[types.UID]*AsideRun[R, N]
	events chan ctrlevent.GenericEvent
}

// AsideRun is one call's run: Done once its work returned Result and Err.
type AsideRun[R, N any] struct {
	Done   bool
	Result R
	Err    error
	Note   N
}

// NewAside is an Aside whose wake-ups wait in a buffer of 1024.
func NewAside[R, N any]() *Aside[R, N] {
	return &Aside[R, N]{runs: map[types.UID]*AsideRun[R, N]{}, events: make(chan ctrlevent.GenericEvent, 1024)}
}

// Wakeups are the events of runs that ended, naming their calls.
func (a *Aside[R, N]) Wakeups() chan ctrlevent.GenericEvent { return a.events }

// Start runs fn aside for the call, noted note, unless the call has a run (or a note)
// already; fn's end is recorded, then wakes the call's reconcile.
func (a *Aside[R, N]) Start(call *v1alpha1.ToolCall, note N, fn func() (R, error)) {
	a.mu.Lock()
	if _, running := a.runs[call.UID]; running {
		a.mu.Unlock()
		return
	}
	run := &AsideRun[R, N]{Note: note}
	a.runs[call.UID] = run
	a.mu.Unlock()
	wake := &v1alpha1.ToolCall{}
	wake.Namespace, wake.Name = call.Namespace, call.Name
	go func() {
		result, err := fn()
		a.mu.Lock()
		run.Done, run.Result, run.Err = true, result, err
		a.mu.Unlock()
		a.events <- ctrlevent.GenericEvent{Object: wake}
	}()
}

// Get is a copy of the call's run (false: none).
func (a *Aside[R, N]) Get(uid types.UID) (AsideRun[R, N], bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if run, ok := a.runs[uid]; ok {
		return *run, true
	}
	return AsideRun[R, N]{}, false
}

// Note edits the note of the call's run; a call without one gets an entry of its own when
// create (no work runs for it then), and is left alone otherwise.
func (a *Aside[R, N]) Note(uid types.UID, create bool, edit func(*N)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	run, ok := a.runs[uid]
	if !ok {
		if !create {
			return
		}
		run = &AsideRun[R, N]{}
		a.runs[uid] = run
	}
	edit(&run.Note)
}

// Forget drops the call's run: a later Start runs the work again.
func (a *Aside[R, N]) Forget(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.runs, uid)
}
