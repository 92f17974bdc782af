package toolcall

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/internal/callmemo"
)

// reviewReuse is how long after admission asked for its live read a result may be reviewed
// against that same read instead of a new one. Both reads start after the call was created,
// so both keep the promise that a policy created before the call governs it; a result back
// within this window (a session call, a warm call) saves post-execute's consistent LIST,
// which the API server answers from its watch cache once that cache has caught up with
// etcd (up to 100 ms when the ToolPolicies have not changed lately). A later result is
// reviewed against a live read, so a policy changed while a long call ran governs its result.
const reviewReuse = 5 * time.Second

// maxHeldReads bounds the admission reads held; past it, expired ones are dropped first,
// then the put is skipped (that call's review reads live).
const maxHeldReads = 4096

// heldReads keeps, per call, the registry admission read for it and when admission asked
// for it (the read started after that), for the call's post-execute review.
type heldReads struct {
	m callmemo.Memo[heldRead]
}

type heldRead struct {
	reg   *registry
	asked time.Time
}

// heldLimit bounds the held reads: a read asked for more than reviewReuse before the one
// put has expired.
var heldLimit = callmemo.Limit[heldRead]{Max: maxHeldReads, Stale: func(kept, put heldRead) bool {
	return put.asked.Sub(kept.asked) > reviewReuse
}}

// put keeps reg, asked for at asked, for call.
func (h *heldReads) put(call *v1alpha1.ToolCall, reg *registry, asked time.Time) {
	h.m.PutWithin(call, heldRead{reg: reg, asked: asked}, heldLimit)
}

// take is admission's read for call when it was asked for no longer than reviewReuse
// before now; the entry goes either way (one review per read).
func (h *heldReads) take(call *v1alpha1.ToolCall, now time.Time) (*registry, bool) {
	e, ok := h.m.Take(call)
	if !ok || now.Sub(e.asked) > reviewReuse {
		return nil, false
	}
	return e.reg, true
}

func (h *heldReads) forget(key types.NamespacedName) { h.m.Forget(key) }
