package toolcall

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// liveCallsFirst raises the calls of the informer's first list that are not terminal from
// the priority queue's low priority (controller-runtime gives every object of an initial
// list LowPriority, so that a restart's resync does not delay real changes) to the default
// one. Found by the real-cluster chaos run: an operator restarted every few seconds under
// load served its stream of Job and Pod events (default priority) and never reached a call
// left Running without a Job by the previous leader's kill between the status write and
// the create. Nothing but the initial list enqueues such a call (it has no Job or Pod to
// send events), so it waited in the low band through ten leaders until its attempt's
// deadline passed and it ended ImageNeverStarted, its body never run. Terminal calls (Job
// clean-up only) stay low.
type liveCallsFirst struct{}

var _ handler.EventHandler = liveCallsFirst{}

// Create adds a live call of the initial list at the default priority (an item already
// queued at low priority is raised; one queued higher keeps its place).
func (liveCallsFirst) Create(_ context.Context, e crevent.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	call, ok := e.Object.(*v1alpha1.ToolCall)
	if !ok || !e.IsInInitialList || call.Status.Phase.IsTerminal() {
		return
	}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(call)}
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(0)}, req)
		return
	}
	q.Add(req)
}

// Update, Delete and Generic leave the queue to the controller's own handler.
func (liveCallsFirst) Update(context.Context, crevent.TypedUpdateEvent[client.Object], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}

func (liveCallsFirst) Delete(context.Context, crevent.TypedDeleteEvent[client.Object], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}

func (liveCallsFirst) Generic(context.Context, crevent.TypedGenericEvent[client.Object], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}
