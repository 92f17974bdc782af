package toolcall

import "github.com/toolgate/toolgate/controllers/internal/coalesce"

// The Reconciler's collaborators: each owns one concern of a call's walk and the
// state that concern keeps; the reconciler itself dispatches on the phase and runs the
// executors (execute.go). Each reaches the reconciler's clients and settings through r,
// set once by wire.

// auditWriter writes the audit records (audit.go) and holds the terminal writes whose
// outcome is unknown until the cache shows them.
type auditWriter struct {
	r       *Reconciler
	pending pendingAudits
}

// approvalNotifier sends the approval CloudEvents of parked calls (approval_notify.go).
type approvalNotifier struct {
	r *Reconciler
}

// retention decides how long a finished call is kept, deletes it when due and keeps the
// record finalizer (toolcall_retention.go, toolcall_record_finalizer.go).
type retention struct {
	r *Reconciler
}

// statusWriter is the one path every status write goes through, the terminal ones above
// all (toolcall_status_write.go): it remembers how far it moved each call (written,
// toolcall_status_written.go) and emits the events and audit record a write carries.
type statusWriter struct {
	r       *Reconciler
	written written
}

// admitter runs admission and the approval wait (toolcall_admit.go, toolcall_approval.go)
// against the live registry (registry.go), whose reads concurrent calls share (registries).
type admitter struct {
	r          *Reconciler
	registries coalesce.Coalescer[*registry]
	// held keeps each admitted call's read for its post-execute review (registry_held.go).
	held heldReads
}

// podStopper stops an ended attempt's Pods and waits until they have (toolcall_stopping.go).
type podStopper struct {
	r *Reconciler
}

// resultReview runs the PostExecute stage on an attempt's result (toolcall_review.go; toolcall_outcome.go calls it).
type resultReview struct {
	r *Reconciler
}

// wire points the collaborators at the reconciler, once; Reconcile and SetupWithManager
// call it, and so may whoever calls a collaborator first (tests).
func (r *Reconciler) wire() *Reconciler {
	r.wireOnce.Do(func() {
		r.audit.r, r.notices.r, r.retention.r, r.status.r = r, r, r, r
		r.admission.r, r.stopper.r, r.review.r = r, r, r
	})
	return r
}
