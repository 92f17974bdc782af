package toolcall

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

// A call is its own audit record, so the operator holds it (FinalizerRecord) until the
// record is complete: a call deleted before it ended — by an admin, by its namespace's
// deletion, by the garbage collector after an owner went — still has its body stopped,
// gets a terminal result (Deleted) through the one terminal path, and so an audit record,
// before it may go. The toolgate-requester admission policy adds the finalizer at create
// (no API write of the operator's); ensureRecordFinalizer adds it to a live call that lacks
// it (created where that policy is not installed).

// ensureRecordFinalizer puts FinalizerRecord on a live call that lacks it, with the call's
// resourceVersion as precondition (the patch then carries the whole list safely).
func (t *retention) ensureRecordFinalizer(ctx context.Context, call *v1alpha1.ToolCall) error {
	r := t.r
	if controllerutil.ContainsFinalizer(call, v1alpha1.FinalizerRecord) {
		return nil
	}
	patch := client.MergeFromWithOptions(call.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(call, v1alpha1.FinalizerRecord)
	return r.Patch(ctx, call, patch)
}

// finishDeleted completes the record of a call that is being deleted, then lets it go: a
// call that had not ended is ended Deleted (its running attempt stopped through its
// executor, and the end recorded once its Pods have stopped: until then the call stays,
// unfinished, its session's barrier); a terminal call's audit record, if its write's was
// lost, is emitted. Then the "toolcall released" record is logged and the finalizer
// removed. Without FinalizerRecord (a call from before it existed) there is nothing to hold.
func (t *retention) finishDeleted(ctx context.Context, call *v1alpha1.ToolCall, retained time.Duration) (ctrl.Result, error) {
	r := t.r
	if !controllerutil.ContainsFinalizer(call, v1alpha1.FinalizerRecord) {
		return ctrl.Result{RequeueAfter: retained}, nil
	}
	// The cache may still hold the call after this reconciler let it go (the deletion's event
	// not seen yet): read it from the API server, so a call is released once, not twice.
	if r.APIReader != nil {
		fresh := &v1alpha1.ToolCall{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(call), fresh); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if !controllerutil.ContainsFinalizer(fresh, v1alpha1.FinalizerRecord) {
			return ctrl.Result{}, nil
		}
		call = fresh
	}
	if call.Status.Phase.IsTerminal() {
		r.audit.auditRecovered(ctx, call)
	} else {
		res, err := r.endEarly(ctx, call, earlyEnd{reason: v1alpha1.ReasonDeleted, cause: "deleted", result: pipeline.Deleted})
		if err != nil {
			return ctrl.Result{}, err
		}
		if !call.Status.Phase.IsTerminal() {
			return res, nil // its body is still stopping: the call holds its session until it has
		}
		ctrl.LoggerFrom(ctx).Info("recorded the end of a call deleted before it finished")
	}
	r.audit.emitReleased(call)
	patch := client.MergeFromWithOptions(call.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(call, v1alpha1.FinalizerRecord)
	if err := r.Patch(ctx, call, patch); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: retained}, nil
}
