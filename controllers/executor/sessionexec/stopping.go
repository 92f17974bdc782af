package sessionexec

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// StoppingPods is the session Pod the attempt ran in while it is being deleted (a cancel,
// an end without the runner's account): the end is recorded once it has stopped. A Pod of
// that name that is not being deleted is a fresh one, which no longer runs this attempt.
// While it returns the Pod, the call waits on it (PodWaiters): a session Pod carries no
// mark of its calls, so only that wakes the call when the Pod stops or goes.
func (s *Executor) StoppingPods(ctx context.Context, call *v1alpha1.ToolCall, a *v1alpha1.Attempt) ([]*corev1.Pod, error) {
	if a == nil || a.PodName == "" {
		s.stops.Forget(client.ObjectKeyFromObject(call))
		return nil, nil
	}
	key := types.NamespacedName{Namespace: call.Namespace, Name: a.PodName}
	// Noted before the read: an event of the Pod after it wakes the call.
	s.stops.Put(call, key)
	// Live: the cache may not show the deletion Stop or ended has just asked for.
	pod := &corev1.Pod{}
	err := s.APIReader.Get(ctx, key, pod)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, err
	case pod.Labels[podcontract.LabelSessionPod] != "" && !pod.DeletionTimestamp.IsZero():
		return []*corev1.Pod{pod}, nil
	}
	s.stops.Forget(client.ObjectKeyFromObject(call))
	return nil, nil
}

// PodWaiters are the calls whose end waits for the session Pod pod to stop
// (executor.PodWaiters).
func (s *Executor) PodWaiters(pod types.NamespacedName) []types.NamespacedName {
	return s.stops.Keys(func(waitsOn types.NamespacedName) bool { return waitsOn == pod })
}
