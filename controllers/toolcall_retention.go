package controllers

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/history"
)

// RetentionOptions say how long finished calls are kept and what their audit record holds.
type RetentionOptions struct {
	// TTL is the operator-wide default ttlSecondsAfterFinished of calls whose spec and tool
	// set none; 0 keeps such calls forever (no default TTL).
	TTL time.Duration
	// MinTTL is the floor of a call's own spec.ttlSecondsAfterFinished: retention is the
	// platform's, so a caller may keep its call longer, never shorter than this (0: no
	// floor). It does not bound the tool's callTTLSecondsAfterFinished nor TTL, which the
	// platform sets itself.
	MinTTL time.Duration
	// MaxTTL is the ceiling of every TTL an object sets (the call's, raised to MinTTL, and
	// its tool's callTTLSecondsAfterFinished) and of an expiry already recorded: etcd's
	// room is the platform's, and an int32 of seconds reaches 2094. 0: no ceiling (the
	// manager refuses 0; TTL is checked against it when the flags are read).
	MaxTTL time.Duration
	// HistorySucceeded and HistoryFailed keep, per namespace, at most that many Succeeded
	// calls and Failed or Denied calls (the most recently finished); 0: no limit.
	HistorySucceeded, HistoryFailed int
	// AuditIncludeContent puts the arguments and the result content into the audit record.
	AuditIncludeContent bool
}

// DefaultMinTTL is the default floor of a call's own TTL: long enough for the client that
// waits on the call (the CLI, the MCP gateway) and a person who looks at it right after to
// read its frozen result, however short a TTL the caller asked for.
const DefaultMinTTL = 5 * time.Minute

// DefaultMaxTTL is the default ceiling of a call's TTL: a week, so that a review after a
// weekend or a holiday still finds the call, while agents asking for years cannot make etcd
// hold their calls past what it can: a day of 50,000 calls is ≈ 0.5 GiB in etcd
// (docs/retention.md), so a week is ≈ 3.5 GiB and a month ≈ 15 GiB, past etcd's largest
// recommended quota (8 GiB). What must outlive a week is in the audit record (the log).
const DefaultMaxTTL = 7 * 24 * time.Hour

// DefaultRetentionOptions keep a finished call for 24 hours, at least 5 minutes and at
// most 7 days whatever the call or its tool asks, with no history limit.
func DefaultRetentionOptions() RetentionOptions {
	return RetentionOptions{TTL: 24 * time.Hour, MinTTL: DefaultMinTTL, MaxTTL: DefaultMaxTTL}
}

// effectiveTTL is the TTL that applies to a call: its own spec.ttlSecondsAfterFinished
// raised to the operator's floor (MinTTL), else its tool snapshot's
// callTTLSecondsAfterFinished, either lowered to the operator's ceiling (MaxTTL), else the
// operator's default. ok is false when none applies (the call is kept).
func (r *ToolCallReconciler) effectiveTTL(call *v1alpha1.ToolCall) (ttl time.Duration, ok bool) {
	if t := call.Spec.TTLSecondsAfterFinished; t != nil {
		// The caller's own value: the agent may lengthen its record's life, not shorten it.
		return r.Options.Retention.ceiling(max(time.Duration(*t)*time.Second, r.Options.Retention.MinTTL)), true
	}
	if snap := call.Status.Tool; snap != nil && snap.Spec != nil && snap.Spec.CallTTLSecondsAfterFinished != nil {
		return r.Options.Retention.ceiling(time.Duration(*snap.Spec.CallTTLSecondsAfterFinished) * time.Second), true
	}
	if d := r.Options.Retention.TTL; d > 0 {
		return d, true
	}
	return 0, false
}

// ceiling lowers ttl to MaxTTL, when there is one.
func (o RetentionOptions) ceiling(ttl time.Duration) time.Duration {
	if o.MaxTTL > 0 {
		return min(ttl, o.MaxTTL)
	}
	return ttl
}

// setExpiry records, in the terminal status being written, when the call will be deleted.
func (r *ToolCallReconciler) setExpiry(call *v1alpha1.ToolCall, finished time.Time) {
	call.Status.ExpiresAt = nil
	if ttl, ok := r.effectiveTTL(call); ok {
		call.Status.ExpiresAt = ptrTime(finished.Add(ttl))
	}
}

// expiresAt is when a terminal call is due: status.expiresAt, fixed when it ended, but no
// later than its completion time plus the ceiling (a call that ended under an operator
// without one, or with a higher one, asked for 2094 is not kept that long). A call that
// ended without status.expiresAt (before this operator version, or while no TTL applied)
// is due at its completion time plus its own TTL or the operator's default (its tool
// snapshot is not in the cache, see TransformToolCall); ok is false when it is kept.
func (r *ToolCallReconciler) expiresAt(call *v1alpha1.ToolCall) (time.Time, bool) {
	if due := call.Status.ExpiresAt; due != nil {
		if done, most := call.Status.CompletionTime, r.Options.Retention.MaxTTL; done != nil && most > 0 && due.After(done.Add(most)) {
			return done.Add(most), true
		}
		return due.Time, true
	}
	if call.Status.CompletionTime == nil {
		return time.Time{}, false
	}
	ttl, ok := r.effectiveTTL(call)
	return call.Status.CompletionTime.Add(ttl), ok
}

// expire deletes a terminal call whose TTL has passed, or requeues it for when it will
// (or for its next retained Job, whichever comes first). The expiry is read from status,
// so an operator restart resumes it: the informer's initial list reconciles every call.
func (r *ToolCallReconciler) expire(ctx context.Context, call *v1alpha1.ToolCall, retained time.Duration) (ctrl.Result, error) {
	due, ok := r.expiresAt(call)
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
