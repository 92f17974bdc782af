package gateway

import (
	"context"
	"sync"
)

// inFlight tracks the tools/calls in flight by MCP session, so that ending a session
// (an HTTP DELETE) cancels its calls at once: the SDK closes a session only after its
// requests have returned, which for a tool call is when the call ends.
type inFlight struct {
	mu        sync.Mutex
	n         int
	bySession map[string]map[*callSlot]struct{}
}

type callSlot struct{ cancel context.CancelFunc }

// add records a call of session (may be "") and returns the function that removes it.
func (f *inFlight) add(session string, cancel context.CancelFunc) func() {
	s := &callSlot{cancel: cancel}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.bySession == nil {
		f.bySession = map[string]map[*callSlot]struct{}{}
	}
	if f.bySession[session] == nil {
		f.bySession[session] = map[*callSlot]struct{}{}
	}
	f.bySession[session][s] = struct{}{}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.n--
		delete(f.bySession[session], s)
		if len(f.bySession[session]) == 0 {
			delete(f.bySession, session)
		}
	}
}

// cancelSession cancels every call of session in flight and reports how many.
func (f *inFlight) cancelSession(session string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.bySession[session] {
		s.cancel()
	}
	return len(f.bySession[session])
}

// count is the number of calls in flight.
func (f *inFlight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}
