package sessionexec

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
)

// runs tracks the handovers this process runs, by call uid (memory only): each runs aside
// once (executor.Aside), noted with its Pod; began holds the calls whose handover began.
type runs struct {
	*executor.Aside[Reply, runNote]
	mu    sync.Mutex
	began map[types.UID]bool
}

// run is one call's handover, its reply and its note.
type run = executor.AsideRun[Reply, runNote]

// runNote is what a run notes besides its reply: the Pod it was handed to, and whether
// that Pod is replaced once the call is released.
type runNote struct {
	pod     types.UID
	replace bool
}

func (r *runs) begin(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.began == nil {
		r.began = map[types.UID]bool{}
	}
	r.began[uid] = true
}

func (r *runs) begun(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.began[uid]
}

func (r *runs) decide(uid types.UID, replace bool) {
	r.Note(uid, false, func(n *runNote) { n.replace = replace })
}

// done forgets the call's attempt altogether once its outcome is written.
func (r *runs) done(uid types.UID) {
	r.Forget(uid)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.began, uid)
}

// start runs fn aside once per call uid, noted with pod; its end wakes the call's reconcile.
func (r *runs) start(call *v1alpha1.ToolCall, pod *corev1.Pod, fn func() (Reply, error)) {
	r.Start(call, runNote{pod: pod.UID}, fn)
}

// book is what this process knows of its session Pods: which call uses each, and since
// when each is idle (reaper.go).
type book struct {
	mu    sync.Mutex
	users map[types.UID]map[types.UID]bool
	since map[types.UID]time.Time
}

func (b *book) busy(pod, call types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.users == nil {
		b.users, b.since = map[types.UID]map[types.UID]bool{}, map[types.UID]time.Time{}
	}
	if b.users[pod] == nil {
		b.users[pod] = map[types.UID]bool{}
	}
	b.users[pod][call] = true
}

func (b *book) idle(pod, call types.UID, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.users[pod], call)
	if b.since != nil {
		b.since[pod] = now
	}
}

func (b *book) forget(pod types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.users, pod)
	delete(b.since, pod)
}

func (b *book) inUse(pod types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.users[pod]) > 0
}

// idleSince is since when the Pod has served no call (ok false: it serves one now, or this
// process never used it).
func (b *book) idleSince(pod types.UID) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.users[pod]) > 0 {
		return time.Time{}, false
	}
	t, ok := b.since[pod]
	return t, ok
}
