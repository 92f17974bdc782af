package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
)

// Series Q: a pooled tool's session's first call — the example echo Tool copied into the
// session scope (sxScope) with spec.warmPool.size = -pool, each sample in a new session, so
// that each claims one of the tool's session pool Pods (docs/session-sandboxes.md, "A tool
// with a warm pool") instead of starting a session Pod. Before each sample the harness
// waits (unmeasured, at most 60 s) for a Ready session pool Pod; a call that ran in a Pod
// the pool did not start is counted as a miss. After each sample the claimed Pod is deleted
// (the bench's own cleanup: each sample's session would otherwise hold it for the scope's
// idle timeout, and the agent's session Pod cap would turn later samples cold).

const sxPooled = "bench-echo-sx-pool"

// sessionPool is what the Q samples saw.
var sessionPool struct {
	mu     sync.Mutex
	n      int
	misses int
}

// sessionPoolSample is one Q sample: a Ready session pool Pod first (unmeasured), then a
// new session's first call.
func (b *bench) sessionPoolSample(ctx context.Context) sample {
	if err := b.waitPoolOf(ctx, sxPooled, true, 1, 60*time.Second); err != nil {
		return sample{series: "Q", err: err}
	}
	sessionPool.mu.Lock()
	sessionPool.n++
	session := fmt.Sprintf("bench-sq-%s-%d", b.runID, sessionPool.n)
	sessionPool.mu.Unlock()
	return b.callIn(ctx, "Q", sxPooled, sxScope, session)
}

// claimedCheck counts a Q call that did not run in a pool Pod, then deletes the Pod it ran
// in; read before the call is deleted.
func (b *bench) claimedCheck(name string, s *sample) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var tc toolgatev1alpha1.ToolCall
	if err := b.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &tc); err != nil || len(tc.Status.Attempts) == 0 {
		return
	}
	pod := tc.Status.Attempts[len(tc.Status.Attempts)-1].PodName
	if s.err == nil && !strings.HasPrefix(pod, sxPooled+"-warms-") {
		sessionPool.mu.Lock()
		sessionPool.misses++
		sessionPool.mu.Unlock()
	}
	if pod != "" {
		b.del(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}})
	}
}

func reportSessionPool(res map[string][]sample) {
	q := okDurations(res["Q"])
	if len(q) == 0 {
		return
	}
	sq := summarize(q)
	fmt.Printf("\nQ (a pooled tool's session's first call, a session pool Pod claimed): p50 %s, p95 %s, max %s\n", sec(sq.p50), sec(sq.p95), sec(sq.max))
	if x := okDurations(res["X"]); len(x) > 0 {
		sx := summarize(x)
		fmt.Printf("Q/X (a call in the session's running Pod): X p50 %s p95 %s; Q/X at p50 %.2fx (+%s)\n",
			sec(sx.p50), sec(sx.p95), float64(sq.p50)/float64(max(sx.p50, 1)), sec(sq.p50-sx.p50))
	}
	sessionPool.mu.Lock()
	defer sessionPool.mu.Unlock()
	fmt.Printf("Q calls that did not run in a claimed pool Pod (pool miss): %d\n", sessionPool.misses)
}
