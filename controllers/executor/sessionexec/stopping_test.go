package sessionexec

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// A call waits on its session Pod while the Pod is being deleted (StoppingPods returns it),
// and only then: the Pod's events wake it (PodWaiters names it for the Pod's key, for no
// other). It waits no more once the Pod is gone, once it ended, or once it is gone itself.
func TestStoppingPodWaiters(t *testing.T) {
	podKey := types.NamespacedName{Namespace: "team-a", Name: "sess-pod"}
	otherKey := types.NamespacedName{Namespace: "team-a", Name: "another-pod"}
	sessionPod := func(deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podKey.Name, Namespace: podKey.Namespace, UID: "pod-uid",
			Labels: map[string]string{podcontract.LabelSessionPod: "digest"}}}
		if deleting {
			p.DeletionTimestamp, p.Finalizers = &metav1.Time{Time: time.Unix(100, 0)}, []string{"test/hold"}
		}
		return p
	}
	tests := []struct {
		name string
		pod  *corev1.Pod // nil: gone
		// then ends the wait, if set.
		then     func(s *Executor, call *v1alpha1.ToolCall)
		wantPods int
		waiting  bool
	}{
		{name: "being deleted: waits", pod: sessionPod(true), wantPods: 1, waiting: true},
		{name: "not being deleted: a fresh Pod, no wait", pod: sessionPod(false)},
		{name: "gone: no wait"},
		{name: "the call ended", pod: sessionPod(true), wantPods: 1, then: func(s *Executor, call *v1alpha1.ToolCall) {
			call.Status.Phase = v1alpha1.PhaseFailed
			if _, err := s.Tidy(context.Background(), types.NamespacedName{Namespace: call.Namespace, Name: call.Name}, call); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the call is gone", pod: sessionPod(true), wantPods: 1, then: func(s *Executor, call *v1alpha1.ToolCall) {
			if _, err := s.Tidy(context.Background(), types.NamespacedName{Namespace: call.Namespace, Name: call.Name}, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "released", pod: sessionPod(true), wantPods: 1, then: func(s *Executor, call *v1alpha1.ToolCall) {
			s.Release(context.Background(), call, call.Status.Attempts[0], pipeline.Outcome{})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testExecutor(t)
			b := fake.NewClientBuilder() // client-go's scheme: Pods
			if tc.pod != nil {
				b = b.WithObjects(tc.pod)
			}
			s.APIReader = b.Build()
			call := pooledCall(nil)
			call.Status.Phase = v1alpha1.PhaseRunning
			call.Status.Attempts = []v1alpha1.Attempt{{Attempt: 1, Path: v1alpha1.PathSession, PodName: podKey.Name}}
			pods, err := s.StoppingPods(context.Background(), call, &call.Status.Attempts[0])
			if err != nil || len(pods) != tc.wantPods {
				t.Fatalf("StoppingPods = %d Pods, %v; want %d", len(pods), err, tc.wantPods)
			}
			if tc.then != nil {
				tc.then(s, call)
			}
			want := []types.NamespacedName(nil)
			if tc.waiting {
				want = []types.NamespacedName{{Namespace: call.Namespace, Name: call.Name}}
			}
			if got := s.PodWaiters(podKey); !slices.Equal(got, want) {
				t.Errorf("PodWaiters(the call's Pod) = %v, want %v", got, want)
			}
			if got := s.PodWaiters(otherKey); len(got) != 0 {
				t.Errorf("PodWaiters(another Pod) = %v, want none", got)
			}
		})
	}
}
