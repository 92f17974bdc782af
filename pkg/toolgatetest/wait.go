/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package toolgatetest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
)

// Spec helpers that assert through gomega's global fail handler (ginkgo's Fail, or
// gomega.RegisterTestingT): a failure fails the spec at the caller's line.

// Create creates each object with c, in order, failing the spec at the first error.
func Create(ctx context.Context, c client.Client, objs ...client.Object) {
	for _, o := range objs {
		gomega.ExpectWithOffset(1, c.Create(ctx, o)).To(gomega.Succeed(), "creating %T %s", o, client.ObjectKeyFromObject(o))
	}
}

// WaitTerminal waits until the ToolCall key is in a terminal phase (Succeeded, Failed or
// Denied) and returns it; the failure shows the call as last read (Explain). It waits up to
// LongTimeout, as a call that runs waits on a Job and a Pod: the bound catches a call that
// never ends, not a slow machine. For many calls at once use WaitDrained.
func WaitTerminal(ctx context.Context, c client.Reader, key client.ObjectKey) *toolgatev1alpha1.ToolCall {
	call := &toolgatev1alpha1.ToolCall{}
	gomega.EventuallyWithOffset(1, func(g gomega.Gomega) {
		g.Expect(c.Get(ctx, key, call)).To(gomega.Succeed())
		g.Expect(call).To(BeTerminal(), "%s", Explain(call))
	}).WithContext(ctx).WithTimeout(LongTimeout).Should(gomega.Succeed(), "ToolCall %s ends", key)
	return call
}

// WaitDrained waits until done reports at least want (calls ended, say), polling every
// Interval, for as long as the count keeps rising: it fails only when the count has not
// risen for stall, or ctx ends. The verdict on a burst is thus "it drains", never "it
// drains at this machine's speed" — the whole may take many times stall. An error from
// done is retried; it is returned if it lasts the whole stall.
func WaitDrained(ctx context.Context, want int, stall time.Duration, done func(context.Context) (int, error)) error {
	best, since := -1, time.Now()
	var lastErr error
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for {
		n, err := done(ctx)
		lastErr = err
		if err == nil && n >= want {
			return nil
		}
		if err == nil && n > best {
			best, since = n, time.Now()
		}
		if time.Since(since) > stall {
			if lastErr != nil {
				return fmt.Errorf("%d of %d done, then no progress for %s: %w", max(best, 0), want, stall, lastErr)
			}
			return fmt.Errorf("%d of %d done, then no progress for %s", max(best, 0), want, stall)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d done: %w", max(best, 0), want, ctx.Err())
		case <-tick.C:
		}
	}
}

// Explain renders a call's phase, conditions and result for a failure message (messages
// and content shortened).
func Explain(call *toolgatev1alpha1.ToolCall) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s\n", call.Status.Phase)
	for _, c := range call.Status.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s: %.400s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	if res := call.Status.Result; res != nil {
		content := ""
		if res.Content != nil {
			content = string(res.Content.Raw)
		}
		fmt.Fprintf(&b, "  result: reason=%s error=%.600q content=%.300s meta=%v\n", res.Reason, res.Error, content, res.Meta)
	}
	return b.String()
}
