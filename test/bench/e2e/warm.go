package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Series W (issue 14): a warm ToolCall — the example echo Tool copied into the namespace
// layer as warmTool with spec.warmPool.size = -pool — next to A (the same call, cold).
// Before each W sample the harness waits (unmeasured, at most 30 s) for a Ready pool Pod,
// so that W measures the warm path; a W call that ran cold anyway is counted as a miss.
// The pool Pods' refill (first watch event → Ready event) is recorded from the Pod watch.
// -burst N then runs rounds of N concurrent warm calls with the pool resized to N.

const (
	warmTool  = "bench-echo-warm"
	poolLabel = podcontract.LabelPool
)

// warmState is what the Pod watch saw of the bench pool's Pods.
type warmState struct {
	mu      sync.Mutex
	added   map[string]time.Time
	refills []time.Duration
	misses  int
}

var warm = &warmState{added: map[string]time.Time{}}

// poolPodEvent records a pool Pod's first sighting and its first Ready.
func poolPodEvent(p *corev1.Pod, now time.Time) {
	if p.Labels[poolLabel] != warmTool {
		return
	}
	warm.mu.Lock()
	defer warm.mu.Unlock()
	first, seen := warm.added[p.Name]
	if !seen {
		warm.added[p.Name] = now
		first = now
	}
	if first.IsZero() {
		return // Ready already recorded
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			warm.refills = append(warm.refills, now.Sub(first))
			warm.added[p.Name] = time.Time{}
		}
	}
}

// createWarmTool makes warmTool from the example echo Tool with a pool of size.
func (b *bench) createWarmTool(ctx context.Context, size int32) (func(), error) {
	return b.createPooledEcho(ctx, warmTool, "", size)
}

// createPooledEcho makes name, the example echo Tool copied into scope ("": the namespace
// layer) with a pool of size, and returns its removal.
func (b *bench) createPooledEcho(ctx context.Context, name, scope string, size int32) (func(), error) {
	var src toolgatev1alpha1.Tool
	if err := b.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "echo"}, &src); err != nil {
		return nil, fmt.Errorf("example echo Tool: %w", err)
	}
	t := &toolgatev1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: b.labels()}}
	t.Spec.ToolSpec = *src.Spec.ToolSpec.DeepCopy()
	t.Spec.Name, t.Spec.Scope = "", scope
	t.Spec.WarmPool = &toolgatev1alpha1.WarmPool{Size: size}
	_ = client.IgnoreNotFound(b.admin.Delete(ctx, t))
	time.Sleep(500 * time.Millisecond)
	if err := b.admin.Create(ctx, t); err != nil {
		return nil, fmt.Errorf("create Tool %s: %w", name, err)
	}
	if err := waitRegistered(ctx, b.admin, name); err != nil {
		return nil, err
	}
	return func() { b.del(t) }, nil
}

// resizePool sets the pool's size and waits until that many Pods are Ready.
func (b *bench) resizePool(ctx context.Context, size int32) error {
	var t toolgatev1alpha1.Tool
	if err := b.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: warmTool}, &t); err != nil {
		return err
	}
	t.Spec.WarmPool.Size = size
	if err := b.admin.Update(ctx, &t); err != nil {
		return err
	}
	return b.waitPool(ctx, int(size), 2*time.Minute)
}

// waitPool waits until n warm pool Pods of warmTool are Ready and unclaimed.
func (b *bench) waitPool(ctx context.Context, n int, limit time.Duration) error {
	return b.waitPoolOf(ctx, warmTool, false, n, limit)
}

// waitPoolOf waits until n pool Pods of tool are Ready and unclaimed: its session pool Pods
// (those carrying the session CA, kept where a scope declares sessionSandbox, as the bench's
// session scope does) when session, else its warm Pods.
func (b *bench) waitPoolOf(ctx context.Context, tool string, session bool, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var pods corev1.PodList
		ready := 0
		if err := b.admin.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{poolLabel: tool}); err == nil {
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && podIsReady(&p) && (p.Annotations[podcontract.AnnotationSessionCA] != "") == session {
					ready++
				}
			}
		}
		if ready >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pool %s: %d of %d Pods Ready after %s", tool, ready, n, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// warmSample is one W sample: a Ready Pod first (unmeasured), then the call.
func (b *bench) warmSample(ctx context.Context) sample {
	if err := b.waitPool(ctx, 1, 30*time.Second); err != nil {
		return sample{series: "W", err: err}
	}
	return b.call(ctx, "W", warmTool, "")
}

func (b *bench) ranWarm(ctx context.Context, name string) bool {
	var tc toolgatev1alpha1.ToolCall
	if err := b.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &tc); err != nil {
		return false
	}
	return len(tc.Status.Attempts) > 0 && tc.Status.Attempts[0].Path == toolgatev1alpha1.PathWarm
}

// burst runs rounds of n concurrent warm calls with a pool of n.
func (b *bench) burst(ctx context.Context, n, rounds int) ([]time.Duration, int, error) {
	if err := b.resizePool(ctx, int32(n)); err != nil {
		return nil, 0, err
	}
	var all []time.Duration
	fails := 0
	for r := 0; r < rounds; r++ {
		if err := b.waitPool(ctx, n, 2*time.Minute); err != nil {
			return all, fails, err
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				cctx, cancel := context.WithTimeout(ctx, b.o.timeout)
				defer cancel()
				s := b.call(cctx, "W", warmTool, "")
				mu.Lock()
				defer mu.Unlock()
				if s.err != nil {
					fails++
					return
				}
				all = append(all, s.d)
			})
		}
		wg.Wait()
		time.Sleep(2 * time.Second)
	}
	return all, fails, nil
}

func reportWarm(res map[string][]sample, burst []time.Duration, burstFails, burstN int) {
	a, w := okDurations(res["A"]), okDurations(res["W"])
	if len(w) == 0 {
		return
	}
	sa, sw := summarize(a), summarize(w)
	fmt.Printf("\nW (warm): p50 %s, p95 %s, max %s; A/W at p50 %.2fx (goal >= 4x); goals p50 <= 0.300s %s, p95 <= 0.500s %s\n",
		sec(sw.p50), sec(sw.p95), sec(sw.max), float64(sa.p50)/float64(max(sw.p50, 1)),
		verdict(sw.p50 <= 300*time.Millisecond), verdict(sw.p95 <= 500*time.Millisecond))
	var claim, toEnd []time.Duration
	for _, sm := range res["W"] {
		if sm.err != nil {
			continue
		}
		if c, ok := sm.parts["pod"]; ok {
			claim = append(claim, c)
			toEnd = append(toEnd, sm.d-c)
		}
	}
	if len(claim) > 0 {
		fmt.Printf("W breakdown p50: create -> claim seen %s (admission + claim patch), claim -> result frozen %s (attach, handover, body, stream, final write)\n",
			sec(summarize(claim).p50), sec(summarize(toEnd).p50))
	}
	warm.mu.Lock()
	refills := append([]time.Duration(nil), warm.refills...)
	misses := warm.misses
	warm.mu.Unlock()
	if len(refills) > 0 {
		sort.Slice(refills, func(i, j int) bool { return refills[i] < refills[j] })
		r := summarize(refills)
		fmt.Printf("pool refill (pool Pod first seen -> Ready): n=%d p50 %s p95 %s max %s\n", r.n, sec(r.p50), sec(r.p95), sec(r.max))
	}
	fmt.Printf("W calls that ran cold (pool miss): %d\n", misses)
	if burstN > 0 {
		bs := summarize(burst)
		fmt.Printf("burst of %d concurrent warm calls, pool %d: n=%d (failed %d) p50 %s p95 %s max %s; goal p95 <= 1s %s\n",
			burstN, burstN, bs.n, burstFails, sec(bs.p50), sec(bs.p95), sec(bs.max), verdict(bs.p95 <= time.Second))
	}
}

func okDurations(ss []sample) []time.Duration {
	var out []time.Duration
	for _, s := range ss {
		if s.err == nil {
			out = append(out, s.d)
		}
	}
	return out
}

// ranWarmCheck counts a W call that ran cold, read before the call is deleted.
func (b *bench) ranWarmCheck(name string, s *sample) {
	if s.err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !b.ranWarm(ctx, name) {
		warm.mu.Lock()
		warm.misses++
		warm.mu.Unlock()
	}
}
