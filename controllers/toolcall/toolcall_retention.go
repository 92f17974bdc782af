package toolcall

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/history"
)

// effectiveTTL is the TTL that applies to a call: its own spec.ttlSecondsAfterFinished
// raised to the operator's floor (MinTTL), else its tool snapshot's
// callTTLSecondsAfterFinished, either lowered to the operator's ceiling (MaxTTL), else the
// operator's default. ok is false when none applies (the call is kept).
func (t *retention) effectiveTTL(call *v1alpha1.ToolCall) (ttl time.Duration, ok bool) {
	r := t.r
	if t := call.Spec.TTLSecondsAfterFinished; t != nil {
		// The caller's own value: the agent may lengthen its record's life, not shorten it.
		return r.Options.Retention.Ceiling(max(time.Duration(*t)*time.Second, r.Options.Retention.MinTTL)), true
	}
	if snap := call.Status.Tool; snap != nil && snap.Spec != nil && snap.Spec.CallTTLSecondsAfterFinished != nil {
		return r.Options.Retention.Ceiling(time.Duration(*snap.Spec.CallTTLSecondsAfterFinished) * time.Second), true
	}
	if d := r.Options.Retention.TTL; d > 0 {
		return d, true
	}
	return 0, false
}

// setExpiry records, in the terminal status being written, when the call will be deleted.
func (t *retention) setExpiry(call *v1alpha1.ToolCall, finished time.Time) {
	call.Status.ExpiresAt = nil
	if ttl, ok := t.effectiveTTL(call); ok {
		call.Status.ExpiresAt = ptrTime(finished.Add(ttl))
	}
}

// expiresAt is when a terminal call is due: status.expiresAt, fixed when it ended, but no
// later than its completion time plus the ceiling (a call that ended under an operator
// without one, or with a higher one, asked for 2094 is not kept that long). A call that
// ended without status.expiresAt (before this operator version, or while no TTL applied)
// is due at its completion time plus its own TTL or the operator's default (its tool
// snapshot is not in the cache, see TransformToolCall); ok is false when it is kept.
func (t *retention) expiresAt(call *v1alpha1.ToolCall) (time.Time, bool) {
	r := t.r
	if due := call.Status.ExpiresAt; due != nil {
		if done, most := call.Status.CompletionTime, r.Options.Retention.MaxTTL; done != nil && most > 0 && due.After(done.Add(most)) {
			return done.Add(most), true
		}
		return due.Time, true
	}
	if call.Status.CompletionTime == nil {
		return time.Time{}, false
	}
	ttl, ok := t.effectiveTTL(call)
	return call.Status.CompletionTime.Add(ttl), ok
}

// expire deletes a terminal call whose TTL has passed, or requeues it for when it will
// (or for its next retained Job, whichever comes first). The expiry is read from status,
// so an operator restart resumes it: the informer's initial list reconciles every call.
func (t *retention) expire(ctx context.Context, call *v1alpha1.ToolCall, retained time.Duration) (ctrl.Result, error) {
	r := t.r
	due, ok := t.expiresAt(call)
	if !ok {
		return ctrl.Result{RequeueAfter: retained}, nil
	}
	if wait := due.Sub(r.Clock.Now()); wait > 0 {
		if retained > 0 && retained < wait {
			wait = retained
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	return ctrl.Result{}, history.DeleteFinished(ctx, r.Client, call, history.DeletedTTL)
}
