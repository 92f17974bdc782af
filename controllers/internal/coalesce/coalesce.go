// Package coalesce shares live reads among concurrent callers without giving up their
// consistency (Coalescer).
package coalesce

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Coalescer shares live reads among concurrent callers without giving up their
// consistency: a caller gets the answer of a read that *started after it asked*, never of
// one already in flight. So whatever existed when a caller asked (a ToolPolicy whose create
// returned before the call was created, and so before the reconciler asked) is in its
// answer, exactly as if it had read alone (LISTs with resourceVersion "" are consistent
// reads), while a burst of callers costs one read per round trip instead of one each.
//
// Per key there is at most one read in flight and one waiting round: a caller that finds
// no read in flight starts one; a caller that finds one in flight joins the next round,
// which starts as soon as the read in flight ends and answers every caller that joined it.
// A read's error goes to every caller of its round. A caller whose context ends stops
// waiting; the read goes on for the others (it runs on its own context, bounded by
// timeout).
type Coalescer[T any] struct {
	// Timeout bounds one read; zero means defaultReadTimeout.
	Timeout time.Duration

	mu       sync.Mutex
	inFlight map[string]*round[T] // per key: the round whose read runs now
}

// defaultReadTimeout bounds a shared read: its callers could not leave a hung one otherwise.
const defaultReadTimeout = 30 * time.Second

// round is one read and the callers it answers.
type round[T any] struct {
	read   func(context.Context) (T, error)
	next   *round[T] // the callers who asked while this round's read ran
	joined int       // callers of this round (for tests and metrics)
	done   chan struct{}
	val    T
	err    error
}

// Do returns the answer of a read of key that starts after Do was called; read is what a
// new round runs (callers of one key pass equivalent reads). The answer is shared by the
// round's callers: they must not modify it.
func (c *Coalescer[T]) Do(ctx context.Context, key string, read func(context.Context) (T, error)) (T, error) {
	return c.Join(key, read)(ctx)
}

// Join joins, now, the next round of key that starts after this call, and returns a wait
// for its answer: a caller may join early (while it does other work) and wait later, and
// still gets a read that started after it joined.
func (c *Coalescer[T]) Join(key string, read func(context.Context) (T, error)) func(context.Context) (T, error) {
	c.mu.Lock()
	if c.inFlight == nil {
		c.inFlight = map[string]*round[T]{}
	}
	mine := c.inFlight[key]
	switch {
	case mine == nil:
		mine = &round[T]{read: read, done: make(chan struct{})}
		c.inFlight[key] = mine
		go c.run(key, mine)
	case mine.next == nil:
		mine.next = &round[T]{read: read, done: make(chan struct{})}
		mine = mine.next
	default:
		mine = mine.next // not started yet: it starts after this call
	}
	mine.joined++
	c.mu.Unlock()
	return func(ctx context.Context) (T, error) {
		select {
		case <-mine.done:
			return mine.val, mine.err
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
}

// run runs r's read, then each following round's, until no caller waits.
func (c *Coalescer[T]) run(key string, r *round[T]) {
	for r != nil {
		r.val, r.err = c.runRead(r.read)
		c.mu.Lock()
		next := r.next
		if next == nil {
			delete(c.inFlight, key)
		} else {
			c.inFlight[key] = next
		}
		c.mu.Unlock()
		close(r.done)
		r = next
	}
}

// runRead runs one read on a context of its own; a panic is its callers' error.
func (c *Coalescer[T]) runRead(read func(context.Context) (T, error)) (val T, err error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = defaultReadTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("shared read panicked: %v", p)
		}
	}()
	return read(ctx)
}

// Waiting is how many callers wait for the round after the read in flight of key (for
// tests: a caller that asked during a read has joined the next round).
func (c *Coalescer[T]) Waiting(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.inFlight[key]; r != nil && r.next != nil {
		return r.next.joined
	}
	return 0
}
