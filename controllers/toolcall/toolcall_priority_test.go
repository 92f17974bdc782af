package toolcall

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

func callIn(name string, phase v1alpha1.ToolCallPhase) *v1alpha1.ToolCall {
	return &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Status: v1alpha1.ToolCallStatus{Phase: phase}}
}

// After a restart the controller's own handler queues every call of the initial list at
// low priority; events that arrive after it (another call's Job or Pod changing) come at
// the default priority and used to be served first, for as long as they kept coming. With
// liveCallsFirst a live call of the initial list is served before them; a terminal one
// still after them.
func TestLiveCallsFirstServesInitialLiveCallsBeforeLaterEvents(t *testing.T) {
	for _, tc := range []struct {
		name      string
		withRaise bool
		want      []string
	}{
		{"controller-runtime's handler alone", false, []string{"event", "running", "done"}},
		{"with liveCallsFirst", true, []string{"running", "event", "done"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			q := priorityqueue.New[reconcile.Request]("test")
			defer q.ShutDown()
			own := handler.WithLowPriorityWhenUnchanged(&handler.EnqueueRequestForObject{})
			for _, c := range []*v1alpha1.ToolCall{callIn("running", v1alpha1.PhaseRunning), callIn("done", v1alpha1.PhaseSucceeded)} {
				e := crevent.TypedCreateEvent[client.Object]{Object: c, IsInInitialList: true}
				own.Create(ctx, e, q)
				if tc.withRaise {
					liveCallsFirst{}.Create(ctx, e, q)
				}
			}
			// A later change of another call (its Job or Pod): default priority.
			q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(0)}, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "event"}})

			var got []string
			for range tc.want {
				item, _, shutdown := getWithin(q, time.Second)
				if shutdown {
					t.Fatal("queue shut down")
				}
				got = append(got, item.Name)
				q.Done(item)
			}
			for i := range tc.want {
				if got[i] != tc.want[i] {
					t.Fatalf("served %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestLiveCallsFirstIgnoresLaterCreatesAndTerminalCalls(t *testing.T) {
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	liveCallsFirst{}.Create(ctx, crevent.TypedCreateEvent[client.Object]{Object: callIn("new", v1alpha1.PhasePending)}, q)
	liveCallsFirst{}.Create(ctx, crevent.TypedCreateEvent[client.Object]{Object: callIn("done", v1alpha1.PhaseFailed), IsInInitialList: true}, q)
	if n := q.Len(); n != 0 {
		t.Fatalf("queued %d items, want none (the controller's own handler queues those)", n)
	}
}

// getWithin is q.Get with a timeout, so that a wrong expectation fails instead of hanging.
func getWithin(q priorityqueue.PriorityQueue[reconcile.Request], d time.Duration) (reconcile.Request, int, bool) {
	type got struct {
		item     reconcile.Request
		priority int
		shutdown bool
	}
	ch := make(chan got, 1)
	go func() {
		item, priority, shutdown := q.GetWithPriority()
		ch <- got{item, priority, shutdown}
	}()
	select {
	case g := <-ch:
		return g.item, g.priority, g.shutdown
	case <-time.After(d):
		return reconcile.Request{}, 0, true
	}
}
