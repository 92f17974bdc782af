package workspace

import (
	"context"
	"slices"
	"time"

	"github.com/toolgate/toolgate/controllers/executor"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Reconciler deletes a session's workspace claim once the session has been idle
// (no call of it unfinished) for the claim's retention, counted from the end of its last
// call. The end it counts from is recorded on the claim (AnnotationWorkspaceIdleSince), so
// that calls deleted by their own retention do not make the session look newer or older.
// The session's ended Jobs go with the claim (deleteJobs): their Pods would hold it.
type Reconciler struct {
	client.Client
	// Clock is the operator's clock; nil: the real one.
	Clock clock.PassiveClock
}

// SessionIndex is the field index of ToolCalls by spec.session (executor.IndexSession).
const SessionIndex = executor.IndexSession

// isWorkspaceClaim selects toolgate's workspace claims.
func isWorkspaceClaim(o client.Object) bool {
	return o.GetLabels()[podcontract.LabelManagedBy] == podcontract.ManagedByValue &&
		o.GetLabels()[podcontract.LabelWorkspaceScope] != ""
}

// SetupWithManager watches workspace claims and the calls of their sessions (a call that
// ends moves its session's idle time; one that starts keeps the claim).
// It needs SessionIndex (the ToolCall reconciler sets it up).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.PersistentVolumeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(isWorkspaceClaim))).
		Watches(&v1alpha1.ToolCall{}, handler.EnqueueRequestsFromMapFunc(r.sessionClaims)).
		Named("workspace").
		Complete(r)
}

// sessionClaims maps a call to the workspace claims of its session.
func (r *Reconciler) sessionClaims(ctx context.Context, o client.Object) []reconcile.Request {
	call, ok := o.(*v1alpha1.ToolCall)
	if !ok || call.Spec.Session == "" {
		return nil
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, claims, client.InNamespace(call.Namespace),
		client.MatchingLabels{podcontract.LabelWorkspaceSession: SessionLabelValue(call.Spec.Session)}); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range claims.Items {
		if c := &claims.Items[i]; isWorkspaceClaim(c) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}})
		}
	}
	return reqs
}

// Reconcile records when the claim's session went idle and deletes the claim once its
// retention has passed since.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.Get(ctx, req.NamespacedName, pvc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pvc.DeletionTimestamp.IsZero() || !isWorkspaceClaim(pvc) {
		return ctrl.Result{}, nil
	}
	calls, err := r.sessionCalls(ctx, pvc)
	if err != nil {
		return ctrl.Result{}, err
	}
	idle, busy := idleSince(pvc, calls)
	if busy {
		return ctrl.Result{}, nil // a call of the session runs: its end wakes the claim
	}
	if recorded := pvc.Annotations[podcontract.AnnotationWorkspaceIdleSince]; recorded != idle.Format(time.RFC3339) {
		patch := client.MergeFrom(pvc.DeepCopy())
		if pvc.Annotations == nil {
			pvc.Annotations = map[string]string{}
		}
		pvc.Annotations[podcontract.AnnotationWorkspaceIdleSince] = idle.Format(time.RFC3339)
		if err := r.Patch(ctx, pvc, patch); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if wait := idle.Add(claimRetention(pvc)).Sub(r.Clock.Now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("claim", pvc.Name)
	if err := r.deleteJobs(ctx, pvc); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Delete(ctx, pvc, client.Preconditions{UID: &pvc.UID}); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	log.Info("deleted an idle session workspace", "idleSince", idle)
	return ctrl.Result{}, nil
}

// sessionCalls are the calls of the claim's session and requester (in its namespace, any
// scope).
func (r *Reconciler) sessionCalls(ctx context.Context, pvc *corev1.PersistentVolumeClaim) ([]v1alpha1.ToolCall, error) {
	calls := &v1alpha1.ToolCallList{}
	if err := r.List(ctx, calls, client.InNamespace(pvc.Namespace),
		client.MatchingFields{SessionIndex: pvc.Annotations[podcontract.AnnotationWorkspaceSession]}); err != nil {
		return nil, err
	}
	requester := pvc.Annotations[podcontract.AnnotationWorkspaceRequester]
	return slices.DeleteFunc(calls.Items, func(c v1alpha1.ToolCall) bool { return c.Spec.Requester != requester }), nil
}

// idleSince is when the claim's session last went idle: the latest end of its calls, the
// recorded one, or the claim's creation, whichever is latest. busy: a call of the session
// has not ended.
func idleSince(pvc *corev1.PersistentVolumeClaim, calls []v1alpha1.ToolCall) (time.Time, bool) {
	idle := pvc.CreationTimestamp.Time
	if t, err := time.Parse(time.RFC3339, pvc.Annotations[podcontract.AnnotationWorkspaceIdleSince]); err == nil && t.After(idle) {
		idle = t
	}
	for i := range calls {
		st := calls[i].Status
		if !st.Phase.IsTerminal() {
			return idle, true
		}
		if st.CompletionTime != nil && st.CompletionTime.After(idle) {
			idle = st.CompletionTime.Time
		}
	}
	return idle.Truncate(time.Second), false
}

// deleteJobs deletes the Jobs whose Pods mounted the claim (labelled with it; their calls
// all ended, their outcomes recorded) ahead of --job-retention: a Pod that mounted the
// claim, even one that ended, keeps it from being deleted (the pvc-protection finalizer
// waits for every scheduled Pod that names it). The Job executor's tidy releases their
// podspec.JobFinalizer on the calls' next pass; the garbage collector then removes their Pods.
func (r *Reconciler) deleteJobs(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	jobs := &batchv1.JobList{}
	if err := r.List(ctx, jobs, client.InNamespace(pvc.Namespace), client.MatchingLabels{podcontract.LabelWorkspaceClaim: pvc.Name}); err != nil {
		return err
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if !job.DeletionTimestamp.IsZero() {
			continue
		}
		err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &job.UID})
		if client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return r.deleteSessionPods(ctx, pvc)
}

// deleteSessionPods deletes the session sandbox Pods (controllers/executor/sessionexec)
// that mount the claim: a session Pod lives while its session is active, and the session
// ends with its workspace. Their TLS Secrets go with them (owned by the Pod's scope, named
// as the Pod: the session executor deletes a Secret whose Pod is gone).
func (r *Reconciler) deleteSessionPods(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(pvc.Namespace), client.MatchingLabels{podcontract.LabelWorkspaceClaim: pvc.Name},
		client.HasLabels{podcontract.LabelSessionPod}); err != nil {
		return err
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
			return err
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
		if err := r.Delete(ctx, sec); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// claimRetention is the retention the claim was created with (the default when the
// annotation is missing or unreadable: someone edited it).
func claimRetention(pvc *corev1.PersistentVolumeClaim) time.Duration {
	d, err := time.ParseDuration(pvc.Annotations[podcontract.AnnotationWorkspaceRetention])
	if err != nil || d <= 0 {
		return defaultWorkspaceRetention
	}
	return d
}
