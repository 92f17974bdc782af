package history

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/metrics"
)

// Reasons a finished call is deleted, the label of toolgate_toolcalls_deleted_total.
const (
	// DeletedTTL is the reason of a call deleted because its TTL passed (controllers).
	DeletedTTL = "ttl"
	// DeletedHistory is the reason of a call deleted for its namespace's history limit (Reconciler).
	DeletedHistory = "history"
)

// DeleteFinished deletes a terminal call (only that incarnation: a uid precondition) with
// background propagation: the garbage collector then deletes what the call owns — its Jobs
// (controller reference), their Pods (the Jobs' own), and the ToolCallApproval that
// `toolgate approve` or the test kit bound to it (a non-controller reference). An approval
// bound to the call by spec.callUID but written without that reference is deleted here.
func DeleteFinished(ctx context.Context, c client.Client, call *v1alpha1.ToolCall, why string) error {
	if err := deleteUnownedApproval(ctx, c, call); err != nil {
		return err
	}
	uid := call.UID
	err := c.Delete(ctx, call, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
	if err = client.IgnoreNotFound(err); err != nil {
		return err
	}
	metrics.Deleted.WithLabelValues(why).Inc()
	ctrl.LoggerFrom(ctx).V(1).Info("deleted a finished call", "why", why, "completionTime", call.Status.CompletionTime)
	return nil
}

// deleteUnownedApproval deletes the approval named after call when it answered this call
// (spec.callUID) but holds no ownerReference to it, so garbage collection would leave it.
func deleteUnownedApproval(ctx context.Context, c client.Client, call *v1alpha1.ToolCall) error {
	approval := &v1alpha1.ToolCallApproval{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: call.Namespace, Name: call.Name}, approval); err != nil {
		return client.IgnoreNotFound(err)
	}
	if approval.Spec.CallUID != string(call.UID) || ownedBy(approval, call.UID) || !approval.DeletionTimestamp.IsZero() {
		return nil
	}
	uid := approval.UID
	return client.IgnoreNotFound(c.Delete(ctx, approval, client.Preconditions{UID: &uid}))
}

// ownedBy reports whether o holds an owner reference to uid.
func ownedBy(o metav1.Object, uid types.UID) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == uid {
			return true
		}
	}
	return false
}
