package toolcall

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/registration"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/pkg/catalog"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

const (
	// indexActivePhase indexes ToolCalls in a non-terminal phase by that phase (terminal
	// calls are not indexed), so that the active-call gauge reads only the active calls.
	indexActivePhase = "status.activePhase"
	// indexCallName indexes toolgate's Jobs and Pods by the call they run for, so that a
	// reconcile finds a call's children without scanning the namespace.
	indexCallName = executor.IndexCallName
)

func setupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &v1alpha1.ToolCall{}, executor.IndexSession, func(o client.Object) []string {
		call, ok := o.(*v1alpha1.ToolCall)
		if !ok || call.Spec.Session == "" {
			return nil
		}
		return []string{call.Spec.Session}
	})
	if err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &v1alpha1.ToolCall{}, executor.IndexSessionKey, executor.BySessionKey); err != nil {
		return err
	}
	err = indexer.IndexField(ctx, &v1alpha1.Tool{}, registration.IndexToolName, func(o client.Object) []string {
		t, ok := o.(*v1alpha1.Tool)
		if !ok {
			return nil
		}
		return []string{catalog.ToolName(&t.Spec.ToolSpec, t.Name)}
	})
	if err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &v1alpha1.ToolCall{}, indexActivePhase, activePhase); err != nil {
		return err
	}
	byCall := executor.ByCall
	if err := indexer.IndexField(ctx, &batchv1.Job{}, indexCallName, byCall); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &corev1.Pod{}, indexCallName, byCall)
}

func isToolgateObject(o client.Object) bool {
	return o.GetLabels()[podcontract.LabelManagedBy] == podcontract.ManagedByValue
}

// podToCall maps a tool Pod to the call it runs for.
func podToCall(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetAnnotations()[podcontract.AnnotationCallName]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// podToCalls maps a Pod to the calls its events wake: the call it runs for (podToCall),
// and the calls one of execs says wait on it (executor.PodWaiters: a session Pod being
// deleted carries no mark of the call whose end waits for it to stop).
func podToCalls(execs []executor.Executor) handler.MapFunc {
	var waiters []executor.PodWaiters
	for _, e := range execs {
		if w, ok := e.(executor.PodWaiters); ok {
			waiters = append(waiters, w)
		}
	}
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		reqs := podToCall(ctx, o)
		for _, w := range waiters {
			for _, key := range w.PodWaiters(client.ObjectKeyFromObject(o)) {
				reqs = append(reqs, reconcile.Request{NamespacedName: key})
			}
		}
		return reqs
	}
}

// approvalToCall maps a ToolCallApproval to the call it is named after.
func approvalToCall(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}}
}

// sessionPeers maps a call to the queued calls of its session (executor.SessionKey): when
// one call changes (admitted, finished), the calls waiting behind it re-check whether they
// may start.
func (r *Reconciler) sessionPeers(ctx context.Context, o client.Object) []reconcile.Request {
	call, ok := o.(*v1alpha1.ToolCall)
	if !ok || call.Spec.Session == "" {
		return nil
	}
	peers := &v1alpha1.ToolCallList{}
	if err := r.List(ctx, peers, client.InNamespace(call.Namespace), client.MatchingFields{executor.IndexSessionKey: executor.SessionKey(call)}); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range peers.Items {
		p := &peers.Items[i]
		if p.Name != call.Name && p.Status.Phase == v1alpha1.PhaseQueued {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
		}
	}
	return reqs
}

// activePhase is the indexActivePhase value of a call: its phase while not terminal.
func activePhase(o client.Object) []string {
	call, ok := o.(*v1alpha1.ToolCall)
	if !ok || call.Status.Phase == "" || call.Status.Phase.IsTerminal() {
		return nil
	}
	return []string{string(call.Status.Phase)}
}

// PhaseCounter counts non-terminal calls by phase from the cache, for the active gauge.
// It reads only the active calls (the indexActivePhase index: finished calls, however
// many, cost a scrape nothing), without deep copies, and only reads them.
func PhaseCounter(c client.Reader) metrics.PhaseCounter {
	return func(ctx context.Context) (map[string]int, error) {
		counts := map[string]int{}
		for _, phase := range []v1alpha1.ToolCallPhase{v1alpha1.PhaseRunning, v1alpha1.PhaseAwaitingApproval, v1alpha1.PhaseQueued} {
			calls := &v1alpha1.ToolCallList{}
			if err := c.List(ctx, calls, client.MatchingFields{indexActivePhase: string(phase)}, client.UnsafeDisableDeepCopy); err != nil {
				return nil, err
			}
			counts[string(phase)] = len(calls.Items)
		}
		return counts, nil
	}
}
