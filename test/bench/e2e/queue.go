package main

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Series K and V (issue 34): Kueue's overhead. K is series A's call in queueScope, a scope
// whose calls' Jobs wait in the Kueue LocalQueue -queue (make up's toolgate): created
// suspended, admitted by Kueue, resumed; the scope holds no Tool, so the call resolves the
// same namespace-layer echo as A. V is series W's warm call in the same scope: a warm Pod
// is claimed without a Job, so admission does not apply (docs/bursts.md); V shows it costs
// nothing. Run them with A and W: -series AKWV.

const queueScope = "bench-queue"

// createQueueScope makes queueScope, its calls' Jobs in LocalQueue queue.
func (b *bench) createQueueScope(ctx context.Context, queue string) (func(), error) {
	s := toolgatetest.MakeToolScope(queueScope, ns).Subjects("agent").Admission(queue, 5*time.Minute).Obj()
	s.Labels = b.labels()
	_ = client.IgnoreNotFound(b.admin.Delete(ctx, s))
	time.Sleep(500 * time.Millisecond)
	if err := b.admin.Create(ctx, s); err != nil {
		return nil, fmt.Errorf("create ToolScope %s: %w", queueScope, err)
	}
	return func() { b.del(s) }, nil
}

// queuedWarmSample is one V sample: a Ready pool Pod first (unmeasured), then the call.
func (b *bench) queuedWarmSample(ctx context.Context) sample {
	if err := b.waitPool(ctx, 1, 30*time.Second); err != nil {
		return sample{series: "V", err: err}
	}
	return b.call(ctx, "V", warmTool, queueScope)
}
