package gateway

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

const (
	// settle lets a burst of changes (kubectl apply -f dir/) end before one refresh.
	settle = 100 * time.Millisecond
	// retryRefresh is when a failed refresh is tried again.
	retryRefresh = 2 * time.Second
	// minBackoff and maxBackoff bound the wait before reopening a watch that failed.
	minBackoff = time.Second
	maxBackoff = time.Minute
)

// refreshBackoff is the wait before retrying a refresh that failed failures times before.
func refreshBackoff(failures int) time.Duration {
	d := retryRefresh
	for range failures {
		if d *= 2; d >= maxBackoff {
			return maxBackoff
		}
	}
	return d
}

// run keeps the tool list current until ctx ends: one watch per kind that resolution
// reads, each event a kick, and one refresh per burst of kicks.
func (g *Gateway) run(ctx context.Context) {
	kicks := make(chan struct{}, 1)
	kick := func() {
		select {
		case kicks <- struct{}{}:
		default:
		}
	}
	ns := client.InNamespace(g.opts.Client.Namespace)
	go g.watch(ctx, "Tool", func() client.ObjectList { return &v1alpha1.ToolList{} }, kick, ns)
	go g.watch(ctx, "ToolScope", func() client.ObjectList { return &v1alpha1.ToolScopeList{} }, kick, ns)
	go g.watch(ctx, "ClusterTool", func() client.ObjectList { return &v1alpha1.ClusterToolList{} }, kick)
	// A refresh that keeps failing (the identity lost its RBAC, the API server is away) is
	// retried after retryRefresh, doubling up to maxBackoff: one log line a minute, not one
	// every two seconds, for as long as the identity's gateway lives.
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-kicks:
		}
		if !wait(ctx, settle) {
			return
		}
		err := g.refresh(ctx)
		switch {
		case err == nil:
			failures = 0
		case ctx.Err() == nil:
			delay := refreshBackoff(failures)
			failures++
			g.log.Error(err, "Refreshing the tool list; retrying", "retryIn", delay.String(), "failures", failures)
			time.AfterFunc(delay, kick)
		}
	}
}

// watch follows one kind and kicks on every event, reopening the watch when the server
// ends it. A watch opened without a resourceVersion starts with the current objects, so
// nothing changed while it was closed is missed. Errors (ClusterTools may be forbidden)
// are retried with a backoff.
func (g *Gateway) watch(ctx context.Context, kind string, newList func() client.ObjectList, kick func(), opts ...client.ListOption) {
	backoff := minBackoff
	for ctx.Err() == nil {
		w, err := g.opts.Client.C.Watch(ctx, newList(), opts...)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if apierrors.IsForbidden(err) {
				g.log.V(1).Info("Not allowed to watch", "kind", kind, "retryIn", backoff.String())
			} else {
				g.log.Error(err, "Watching; retrying", "kind", kind, "retryIn", backoff.String())
			}
			if !wait(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		if drain(ctx, w, kick) {
			backoff = minBackoff
			continue
		}
		g.log.V(1).Info("The watch ended with an error; reopening", "kind", kind, "retryIn", backoff.String())
		if !wait(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// drain kicks for each event of w until it ends or ctx does. It reports false when the
// watch ended with an error event (expired resourceVersion, a server problem).
func drain(ctx context.Context, w watch.Interface, kick func()) bool {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return true
		case ev, ok := <-w.ResultChan():
			switch {
			case !ok:
				return true
			case ev.Type == watch.Error:
				kick()
				return false
			case ev.Type != watch.Bookmark:
				kick()
			}
		}
	}
}

// wait sleeps for d unless ctx ends first; it reports whether ctx is still live.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
