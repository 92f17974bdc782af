package sessionexec

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// stopPoll is how often a call whose end waits for its session Pod to stop looks whether
// it has gone (a session Pod carries no mark of its calls, so no Pod event wakes them).
const stopPoll = 200 * time.Millisecond

// StoppingPods is the session Pod the attempt ran in while it is being deleted (a cancel,
// an end without the runner's account): the end is recorded once it has stopped. A Pod of
// that name that is not being deleted is a fresh one, which no longer runs this attempt.
func (s *Executor) StoppingPods(ctx context.Context, call *v1alpha1.ToolCall, a *v1alpha1.Attempt) ([]*corev1.Pod, error) {
	if a == nil || a.PodName == "" {
		return nil, nil
	}
	// Live: the cache may not show the deletion Stop or ended has just asked for.
	pod := &corev1.Pod{}
	err := s.APIReader.Get(ctx, types.NamespacedName{Namespace: call.Namespace, Name: a.PodName}, pod)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	case pod.Labels[podcontract.LabelSessionPod] == "" || pod.DeletionTimestamp.IsZero():
		return nil, nil
	}
	s.wakeWhenGone(call, pod)
	return []*corev1.Pod{pod}, nil
}

// wakeWhenGone wakes the call once the Pod has gone from the cache, or once its grace
// period and the operator's grace have run out (the reconciler then calls it overdue); one
// watcher per Pod and call.
func (s *Executor) wakeWhenGone(call *v1alpha1.ToolCall, pod *corev1.Pod) {
	if !s.book.watchStop(pod.UID, call.UID) {
		return
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	wake := &v1alpha1.ToolCall{}
	wake.Namespace, wake.Name = call.Namespace, call.Name
	due := pod.DeletionTimestamp.Add(s.Options.DeadlineGrace)
	podUID, callUID := pod.UID, call.UID // the goroutine reads neither object: the reconciler writes them
	go func() {
		defer s.book.unwatchStop(podUID, callUID)
		ctx, cancel := context.WithDeadline(context.Background(), due)
		defer cancel()
		for ctx.Err() == nil {
			live := &corev1.Pod{}
			if err := s.Get(ctx, key, live); apierrors.IsNotFound(err) || err == nil && live.UID != pod.UID {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(stopPoll):
			}
		}
		s.runs.Wakeups() <- ctrlevent.GenericEvent{Object: wake}
	}()
}
