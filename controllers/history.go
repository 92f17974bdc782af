package controllers

import (
	"context"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// HistoryReconciler keeps, per namespace, at most HistorySucceeded Succeeded calls and
// HistoryFailed Failed or Denied calls (the most recently finished; 0: no limit) and
// deletes the older ones, as CronJob's successfulJobsHistoryLimit and failedJobsHistoryLimit
// do for Jobs. It works per namespace: every call that is (or becomes) terminal enqueues its
// namespace, and the queue folds a burst of them into one pass over the namespace's cached
// calls.
type HistoryReconciler struct {
	client.Client
	Options RetentionOptions
}

// Reconcile trims one namespace's history (the request's Name is empty).
func (r *HistoryReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	calls := &v1alpha1.ToolCallList{}
	if err := r.List(ctx, calls, client.InNamespace(req.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	succeeded, failed := finishedByClass(calls.Items)
	for _, over := range [][]*v1alpha1.ToolCall{beyond(succeeded, r.Options.HistorySucceeded), beyond(failed, r.Options.HistoryFailed)} {
		for _, call := range over {
			// A copy: the listed objects are the cache's own (UnsafeDisableDeepCopy).
			if err := deleteFinished(ctx, r.Client, call.DeepCopy(), deletedHistory); err != nil {
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

// beyond returns the calls past the limit newest ones (by completion time, then creation,
// then name; 0: no limit).
func beyond(calls []*v1alpha1.ToolCall, limit int) []*v1alpha1.ToolCall {
	if limit <= 0 || len(calls) <= limit {
		return nil
	}
	sort.Slice(calls, func(i, j int) bool {
		a, b := finishedAt(calls[i]), finishedAt(calls[j])
		if !a.Equal(b) {
			return a.After(b)
		}
		return calls[i].Name > calls[j].Name
	})
	return calls[limit:]
}

func finishedAt(call *v1alpha1.ToolCall) time.Time {
	if call.Status.CompletionTime != nil {
		return call.Status.CompletionTime.Time
	}
	return call.CreationTimestamp.Time
}

// SetupWithManager registers the reconciler when a limit is set.
func (r *HistoryReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Options.HistorySucceeded <= 0 && r.Options.HistoryFailed <= 0 {
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
