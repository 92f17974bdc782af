// Package history trims the history of finished ToolCalls: per namespace, at most a number
// of Succeeded and of Failed or Denied calls are kept (Reconciler), and DeleteFinished is the
// one way a finished call is deleted, by this trim or when its TTL passed (controllers).
package history

import (
	"context"
	"maps"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// Reconciler keeps, per namespace, at most its Succeeded limit of the calls that
// succeeded and its Failed limit of those that failed or were denied (0: no limit) and
// deletes the others, as CronJob's successfulJobsHistoryLimit and failedJobsHistoryLimit do
// for Jobs; which calls go is shared fairly between requesters (beyond). It works per
// namespace: every call that is (or becomes) terminal enqueues its namespace, and the queue
// folds a burst of them into one pass over the namespace's cached calls.
type Reconciler struct {
	client.Client
	// Succeeded and Failed are the operator's history limits (RetentionOptions'
	// HistorySucceeded and HistoryFailed in controllers); both 0: the reconciler is not set up.
	Succeeded, Failed int
}

// Reconcile trims one namespace's history (the request's Name is empty).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	calls := &v1alpha1.ToolCallList{}
	if err := r.List(ctx, calls, client.InNamespace(req.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	succeeded, failed := finishedByClass(calls.Items)
	for _, over := range [][]*v1alpha1.ToolCall{beyond(succeeded, r.Succeeded), beyond(failed, r.Failed)} {
		for _, call := range over {
			// A copy: the listed objects are the cache's own (UnsafeDisableDeepCopy).
			if err := DeleteFinished(ctx, r.Client, call.DeepCopy(), DeletedHistory); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	return ctrl.Result{}, nil
}

// finishedByClass splits the terminal calls not being deleted into Succeeded and the rest
// (Failed, Denied).
func finishedByClass(items []v1alpha1.ToolCall) (succeeded, failed []*v1alpha1.ToolCall) {
	for i := range items {
		call := &items[i]
		if !call.Status.Phase.IsTerminal() || !call.DeletionTimestamp.IsZero() {
			continue
		}
		if call.Status.Phase == v1alpha1.PhaseSucceeded {
			succeeded = append(succeeded, call)
		} else {
			failed = append(failed, call)
		}
	}
	return succeeded, failed
}

// beyond returns the calls to delete so that at most limit remain (0: no limit). The limit
// is the namespace's, so it bounds what the namespace stores; who loses is chosen fairly
// between requesters (max-min fair shares): each keeps its newest calls, and a requester
// holding more than its share loses its oldest first. One requester's flood of calls thus
// pushes out its own history, not other users' (with a single requester this is simply the
// newest limit calls).
func beyond(calls []*v1alpha1.ToolCall, limit int) []*v1alpha1.ToolCall {
	if limit <= 0 || len(calls) <= limit {
		return nil
	}
	groups := byRequester(calls)
	keep := fairShares(groups, limit)
	var over []*v1alpha1.ToolCall
	for i, group := range groups {
		over = append(over, group[keep[i]:]...)
	}
	return over
}

// byRequester groups calls by spec.requester (in the requesters' name order), each group
// newest first (by completion time, then name).
func byRequester(calls []*v1alpha1.ToolCall) [][]*v1alpha1.ToolCall {
	byName := map[string][]*v1alpha1.ToolCall{}
	for _, call := range calls {
		byName[call.Spec.Requester] = append(byName[call.Spec.Requester], call)
	}
	groups := make([][]*v1alpha1.ToolCall, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		group := byName[name]
		sort.Slice(group, func(i, j int) bool { return newer(group[i], group[j]) })
		groups = append(groups, group)
	}
	return groups
}

// fairShares returns how many of each group's newest calls stay: every group gets
// min(its size, level), level the highest that fits in limit; the places left over (fewer
// than the groups still wanting one) go to the groups whose next call finished most
// recently.
func fairShares(groups [][]*v1alpha1.ToolCall, limit int) []int {
	keep := make([]int, len(groups))
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(groups[order[a]]) < len(groups[order[b]]) })
	left := limit
	for i, g := range order {
		rest := order[i:]
		share := left / len(rest)
		if len(groups[g]) <= share {
			keep[g] = len(groups[g])
			left -= keep[g]
			continue
		}
		// Sorted by size: every group from here on holds more than share.
		for _, r := range rest {
			keep[r] = share
		}
		left -= share * len(rest)
		sort.SliceStable(rest, func(a, b int) bool { return newer(groups[rest[a]][share], groups[rest[b]][share]) })
		for _, r := range rest[:left] {
			keep[r]++
		}
		break
	}
	return keep
}

// newer orders calls newest first: by completion time, then name (descending).
func newer(a, b *v1alpha1.ToolCall) bool {
	ta, tb := finishedAt(a), finishedAt(b)
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.Name > b.Name
}

// finishedAt is when the call finished (its creation time when it has no completion time).
func finishedAt(call *v1alpha1.ToolCall) time.Time {
	if call.Status.CompletionTime != nil {
		return call.Status.CompletionTime.Time
	}
	return call.CreationTimestamp.Time
}

// SetupWithManager registers the reconciler when a limit is set.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Succeeded <= 0 && r.Failed <= 0 {
		return nil
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("toolcall-history").
		Watches(&v1alpha1.ToolCall{}, handler.EnqueueRequestsFromMapFunc(terminalNamespace)).
		Complete(r)
}

// terminalNamespace maps a terminal call to its namespace's history request.
func terminalNamespace(_ context.Context, o client.Object) []reconcile.Request {
	call, ok := o.(*v1alpha1.ToolCall)
	if !ok || !call.Status.Phase.IsTerminal() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: call.Namespace}}}
}
