package agentclient

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// Done reports whether the call's result is written: a terminal phase (Succeeded,
// Failed, Denied) with status.result set. It never changes after that.
func Done(call *v1alpha1.ToolCall) bool {
	switch call.Status.Phase {
	case v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed, v1alpha1.PhaseDenied:
		return call.Status.Result != nil
	}
	return false
}

// AwaitingApproval reports whether the call is parked for a person's decision.
func AwaitingApproval(call *v1alpha1.ToolCall) bool {
	return call.Status.Phase == v1alpha1.PhaseAwaitingApproval
}

// Wait follows the call on a watch until until(call) is true (Done when nil) or ctx ends,
// calling observe (if set) once with every new version it sees, the first one included.
// It returns the last version seen; when ctx ends first it returns that version with
// ctx's error. A watch the server closes is reopened from the last version seen; a call
// deleted while waited on is a NotFound error.
func (c *Client) Wait(ctx context.Context, name string, until func(*v1alpha1.ToolCall) bool, observe func(*v1alpha1.ToolCall)) (*v1alpha1.ToolCall, error) {
	return c.wait(ctx, name, nil, until, observe)
}

// WaitFrom is Wait from a version of the call the caller holds (the one Create returned):
// the watch opens at its resourceVersion without reading the call first, one round trip
// less; a version too old to watch from is read again, as Wait does.
func (c *Client) WaitFrom(ctx context.Context, call *v1alpha1.ToolCall, until func(*v1alpha1.ToolCall) bool, observe func(*v1alpha1.ToolCall)) (*v1alpha1.ToolCall, error) {
	return c.wait(ctx, call.Name, call.DeepCopy(), until, observe)
}

func (c *Client) wait(ctx context.Context, name string, from *v1alpha1.ToolCall, until func(*v1alpha1.ToolCall) bool, observe func(*v1alpha1.ToolCall)) (*v1alpha1.ToolCall, error) {
	if until == nil {
		until = Done
	}
	seen := ""
	see := func(call *v1alpha1.ToolCall) bool {
		if observe != nil && call.ResourceVersion != seen {
			observe(call)
		}
		seen = call.ResourceVersion
		return until(call)
	}
	for {
		last := from
		if from = nil; last == nil || last.ResourceVersion == "" {
			var err error
			if last, err = c.Get(ctx, name); err != nil {
				return nil, err
			}
		}
		if see(last) {
			return last, nil
		}
		next, err := c.watchOnce(ctx, last, see)
		switch {
		case next != nil && until(next):
			return next, nil
		case ctx.Err() != nil:
			return next, ctx.Err()
		case err != nil && !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err):
			return next, err
		}
	}
}

// watchOnce watches the call from last's resourceVersion until see returns true, the
// call is deleted, or the watch ends. It returns the last version seen.
func (c *Client) watchOnce(ctx context.Context, last *v1alpha1.ToolCall, see func(*v1alpha1.ToolCall) bool) (*v1alpha1.ToolCall, error) {
	w, err := c.C.Watch(ctx, &v1alpha1.ToolCallList{}, client.InNamespace(c.Namespace),
		client.MatchingFields{"metadata.name": last.Name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: last.ResourceVersion, AllowWatchBookmarks: true}})
	if err != nil {
		return last, err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return last, nil
			}
			switch ev.Type {
			case watch.Error:
				return last, apierrors.FromObject(ev.Object)
			case watch.Deleted:
				return last, apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource("toolcalls").GroupResource(), last.Name)
			case watch.Added, watch.Modified:
				call, isCall := ev.Object.(*v1alpha1.ToolCall)
				if !isCall {
					return last, fmt.Errorf("watch returned %T, not a ToolCall", ev.Object)
				}
				last = call
				if see(call) {
					return call, nil
				}
			}
		}
	}
}
