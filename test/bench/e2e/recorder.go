package main

import (
	"context"
	"sync"
	"time"
)

type recorder struct {
	mu     sync.Mutex
	counts map[string]int
	seen   map[string]time.Time
	notes  map[string]string
	chans  map[string]chan struct{}
}

func newRecorder() *recorder {
	return &recorder{seen: map[string]time.Time{}, notes: map[string]string{}, chans: map[string]chan struct{}{}}
}

// count adds one to key's counter.
func (r *recorder) count(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	r.counts[key]++
}

// counted is a copy of every counter.
func (r *recorder) counted() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.counts {
		out[k] = v
	}
	return out
}

func (r *recorder) ch(key string) chan struct{} {
	c, ok := r.chans[key]
	if !ok {
		c = make(chan struct{})
		r.chans[key] = c
	}
	return c
}

func (r *recorder) mark(key string, t time.Time, note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.seen[key]; ok {
		return
	}
	r.seen[key], r.notes[key] = t, note
	close(r.ch(key))
}

func (r *recorder) get(key string) (time.Time, string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.seen[key]
	return t, r.notes[key], ok
}

func (r *recorder) wait(ctx context.Context, keys ...string) (string, time.Time, string, error) {
	r.mu.Lock()
	cs := make([]chan struct{}, len(keys))
	for i, k := range keys {
		cs[i] = r.ch(k)
	}
	r.mu.Unlock()
	for {
		for _, k := range keys {
			if t, n, ok := r.get(k); ok {
				return k, t, n, nil
			}
		}
		// Wait on the first key's channel or any other (small fixed set).
		select {
		case <-ctx.Done():
			return "", time.Time{}, "", ctx.Err()
		case <-cs[0]:
		case <-pick(cs, 1):
		case <-pick(cs, 2):
		}
	}
}

func pick(cs []chan struct{}, i int) chan struct{} {
	if i < len(cs) {
		return cs[i]
	}
	return nil
}
