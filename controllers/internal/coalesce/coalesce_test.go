package coalesce

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

// gatedReads is a read function for a Coalescer: read n (from 1) reports that it started,
// waits until its gate is opened (gates[n], when present) and answers n.
type gatedReads struct {
	mu      sync.Mutex
	n       int
	gates   map[int]chan struct{}
	started chan int
	fail    map[int]error
	ctxErrs []error // the read's own context error when it answered
}

func newGatedReads(gated ...int) *gatedReads {
	g := &gatedReads{gates: map[int]chan struct{}{}, started: make(chan int, 100), fail: map[int]error{}}
	for _, n := range gated {
		g.gates[n] = make(chan struct{})
	}
	return g
}

func (g *gatedReads) read(ctx context.Context) (int, error) {
	g.mu.Lock()
	g.n++
	n, gate, err := g.n, g.gates[g.n], g.fail[g.n]
	g.mu.Unlock()
	g.started <- n
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	g.mu.Lock()
	g.ctxErrs = append(g.ctxErrs, ctx.Err())
	g.mu.Unlock()
	if err == nil {
		err = ctx.Err()
	}
	return n, err
}

func (g *gatedReads) reads() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// waitUntil waits, polling, until cond (a state change made by other goroutines) holds,
// for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	gomega.NewWithT(t).Eventually(cond).WithTimeout(10*time.Second).WithPolling(time.Millisecond).
		Should(gomega.BeTrue(), "waiting until %s", what)
}

type answer struct {
	n   int
	err error
}

func ask(c *Coalescer[int], ctx context.Context, key string, g *gatedReads) chan answer {
	out := make(chan answer, 1)
	go func() {
		n, err := c.Do(ctx, key, g.read)
		out <- answer{n, err}
	}()
	return out
}

func TestCoalescerCallerDuringAReadGetsTheNextRead(t *testing.T) {
	c := &Coalescer[int]{}
	g := newGatedReads(1)
	first := ask(c, context.Background(), "ns", g)
	if n := <-g.started; n != 1 {
		t.Fatalf("first read is %d", n)
	}
	// Read 1 is in flight: a caller asking now must not get its answer.
	second := ask(c, context.Background(), "ns", g)
	waitUntil(t, "the second caller joined the next round", func() bool { return c.Waiting("ns") == 1 })
	close(g.gates[1])
	if a := <-first; a.n != 1 || a.err != nil {
		t.Errorf("first caller got %+v, want read 1", a)
	}
	if a := <-second; a.n != 2 || a.err != nil {
		t.Errorf("second caller got %+v, want read 2 (it asked while read 1 was in flight)", a)
	}
	// Idle again: the next caller starts a read of its own.
	if n, err := c.Do(context.Background(), "ns", g.read); n != 3 || err != nil {
		t.Errorf("a caller after the rounds got %d, %v; want read 3", n, err)
	}
}

func TestCoalescerConcurrentCallersShareReads(t *testing.T) {
	const callers = 50
	c := &Coalescer[int]{}
	g := newGatedReads(1)
	first := ask(c, context.Background(), "ns", g)
	<-g.started
	others := make([]chan answer, 0, callers-1)
	for range callers - 1 {
		others = append(others, ask(c, context.Background(), "ns", g))
	}
	waitUntil(t, "every caller joined the next round", func() bool { return c.Waiting("ns") == callers-1 })
	close(g.gates[1])
	if a := <-first; a.n != 1 {
		t.Errorf("first caller got read %d", a.n)
	}
	for i, ch := range others {
		if a := <-ch; a.n != 2 || a.err != nil {
			t.Errorf("caller %d got %+v, want the shared read 2", i, a)
		}
	}
	if n := g.reads(); n != 2 {
		t.Errorf("%d callers cost %d reads, want 2", callers, n)
	}
}

func TestCoalescerKeysDoNotShare(t *testing.T) {
	c := &Coalescer[int]{}
	g := newGatedReads(1)
	a := ask(c, context.Background(), "a", g)
	<-g.started
	b := ask(c, context.Background(), "b", g) // another namespace: its own read at once
	if ab := <-b; ab.n != 2 {
		t.Errorf("key b got read %d, want its own read 2", ab.n)
	}
	close(g.gates[1])
	if aa := <-a; aa.n != 1 {
		t.Errorf("key a got read %d", aa.n)
	}
}

func TestCoalescerErrorGoesToEveryCallerOfItsRound(t *testing.T) {
	c := &Coalescer[int]{}
	g := newGatedReads(1)
	boom := errors.New("the API server is away")
	g.fail[2] = boom
	first := ask(c, context.Background(), "ns", g)
	<-g.started
	second, third := ask(c, context.Background(), "ns", g), ask(c, context.Background(), "ns", g)
	waitUntil(t, "two callers joined the next round", func() bool { return c.Waiting("ns") == 2 })
	close(g.gates[1])
	if a := <-first; a.err != nil {
		t.Errorf("first caller: %v", a.err)
	}
	for _, ch := range []chan answer{second, third} {
		if a := <-ch; !errors.Is(a.err, boom) {
			t.Errorf("a caller of the failed round got %+v, want its error", a)
		}
	}
	if n, err := c.Do(context.Background(), "ns", g.read); err != nil || n != 3 {
		t.Errorf("after a failed round a caller got %d, %v; want a fresh read 3", n, err)
	}
}

func TestCoalescerCancelledCallerLeavesTheReadToTheOthers(t *testing.T) {
	c := &Coalescer[int]{}
	g := newGatedReads(1, 2)
	first := ask(c, context.Background(), "ns", g)
	<-g.started
	ctx, cancel := context.WithCancel(context.Background())
	leaving, staying := ask(c, ctx, "ns", g), ask(c, context.Background(), "ns", g)
	waitUntil(t, "two callers joined the next round", func() bool { return c.Waiting("ns") == 2 })
	close(g.gates[1])
	<-first
	<-g.started // read 2 runs for both
	cancel()
	if a := <-leaving; !errors.Is(a.err, context.Canceled) {
		t.Errorf("the cancelled caller got %+v, want context.Canceled", a)
	}
	close(g.gates[2])
	if a := <-staying; a.n != 2 || a.err != nil {
		t.Errorf("the other caller got %+v, want read 2: one caller's cancellation must not cancel the shared read", a)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, err := range g.ctxErrs {
		if err != nil {
			t.Errorf("read %d's context ended: %v", i+1, err)
		}
	}
}

func TestCoalescerBoundsARead(t *testing.T) {
	c := &Coalescer[int]{Timeout: 10 * time.Millisecond}
	g := newGatedReads(1) // never opened: the read waits for its context
	if _, err := c.Do(context.Background(), "ns", g.read); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a hung read gave %v, want its deadline", err)
	}
}

func TestCoalescerPanickingReadIsAnError(t *testing.T) {
	c := &Coalescer[int]{}
	var calls atomic.Int32
	_, err := c.Do(context.Background(), "ns", func(context.Context) (int, error) {
		calls.Add(1)
		panic("boom")
	})
	if err == nil || calls.Load() != 1 {
		t.Errorf("a panicking read gave %v after %d calls, want an error", err, calls.Load())
	}
	if n, err := c.Do(context.Background(), "ns", func(context.Context) (int, error) { return 7, nil }); n != 7 || err != nil {
		t.Errorf("after a panic a read gave %d, %v", n, err)
	}
}

func TestCoalescerJoinEarlyWaitLater(t *testing.T) {
	c := &Coalescer[int]{}
	g := newGatedReads(1)
	first := ask(c, context.Background(), "ns", g)
	<-g.started
	// Joined while read 1 is in flight, waited for only after read 1 answered: still read 2.
	wait := c.Join("ns", g.read)
	close(g.gates[1])
	<-first
	if n, err := wait(context.Background()); n != 2 || err != nil {
		t.Errorf("an early joiner got %d, %v; want read 2, which started after it joined", n, err)
	}
	// Joined while idle: its read starts at once and is the one it gets, however late it waits.
	wait = c.Join("ns", g.read)
	waitUntil(t, "read 3 started", func() bool { return g.reads() == 3 })
	if n, err := wait(context.Background()); n != 3 || err != nil {
		t.Errorf("a joiner on an idle key got %d, %v; want read 3", n, err)
	}
}
