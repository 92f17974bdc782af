package toolcall

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/internal/callmemo"
)

// issuedRevisions remembers the resourceVersion each call of a session had when this
// process first saw it, until admission records it in status.issuedRevision. The
// reconciler's first write to a call (the record finalizer) changes its resourceVersion
// before admission writes the status; a peer's order must not move with it, so a peer
// patched but not yet admitted is ordered by what was seen before the patch.
type issuedRevisions struct {
	seen callmemo.Memo[string]
}

// see remembers the call's resourceVersion if it is the first sighting of a session call
// whose order is not yet recorded. Call it before any write to the call.
func (s *issuedRevisions) see(call *v1alpha1.ToolCall) {
	if call.Spec.Session == "" || call.Status.IssuedRevision != "" {
		return
	}
	s.seen.Update(call, func(rv string, seen bool) string {
		if seen {
			return rv
		}
		return call.ResourceVersion
	})
}

// of is the call's order of issue: the recorded status.issuedRevision, else the
// resourceVersion this process first saw, else its current one (a call this process has
// not written: unchanged since its creation unless someone else modified it).
func (s *issuedRevisions) of(call *v1alpha1.ToolCall) string {
	if call.Status.IssuedRevision != "" {
		return call.Status.IssuedRevision
	}
	if rv, ok := s.seen.Get(call); ok {
		return rv
	}
	return call.ResourceVersion
}

// stamp records the call's order of issue in its status (in memory; the admission write
// persists it, so a restart keeps it). A resourceVersion that is not a comparable
// integer (a storage other than etcd) is not recorded: such calls order by creation.
func (s *issuedRevisions) stamp(call *v1alpha1.ToolCall) {
	if call.Spec.Session == "" || call.Status.IssuedRevision != "" {
		return
	}
	if rv := s.of(call); wellFormed(rv) {
		call.Status.IssuedRevision = rv
	}
}

// forget drops what is remembered of a call (deleted, or ended: an ended call no longer
// takes part in its session's order).
func (s *issuedRevisions) forget(key types.NamespacedName) { s.seen.Forget(key) }

// wellFormed reports whether rv is a resourceVersion KEP-5504 lets clients compare.
func wellFormed(rv string) bool {
	_, err := resourceversion.CompareResourceVersion(rv, rv)
	return err == nil
}

// orderOfIssue sorts a session's calls in the order they were issued, given each call's
// order key (issuedRevisions.of): resourceVersions of one resource are comparable
// integers (KEP-5504, stable since Kubernetes 1.35), and every create is its own
// revision, so two calls never tie. A key that is not comparable falls back to the
// creation time (1 s resolution); the name breaks what remains.
func orderOfIssue(items []v1alpha1.ToolCall, order func(*v1alpha1.ToolCall) string) {
	type keyed struct {
		call v1alpha1.ToolCall
		key  string
	}
	ks := make([]keyed, len(items))
	for i := range items {
		ks[i] = keyed{call: items[i], key: order(&items[i])}
	}
	sort.SliceStable(ks, func(i, j int) bool {
		a, b := &ks[i], &ks[j]
		if c, err := resourceversion.CompareResourceVersion(a.key, b.key); err == nil && c != 0 {
			return c < 0
		}
		if ta, tb := a.call.CreationTimestamp, b.call.CreationTimestamp; !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		return a.call.Name < b.call.Name
	})
	for i := range ks {
		items[i] = ks[i].call
	}
}
