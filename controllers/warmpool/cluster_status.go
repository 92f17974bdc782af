package warmpool

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/internal/bounds"
	"github.com/toolgate/toolgate/controllers/internal/events"
)

// poolCondition is a pooled ClusterTool's WarmPool condition: True (PoolKept) when every
// listed namespace holds its pool, False (NamespaceMissing) naming the ones that do not
// exist yet — or saying none is listed (a ClusterTool stored before warmPool.namespaces
// was required keeps its spec until it is next edited).
func poolCondition(generation int64, listed, missing []string) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionWarmPool, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPoolKept,
		Message: "the warm pool is kept in every listed namespace", ObservedGeneration: generation}
	if len(listed) == 0 {
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonNamespaceMissing
		c.Message = "spec.warmPool.namespaces lists no namespace: no pool is kept and every call runs cold"
	} else if len(missing) > 0 {
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonNamespaceMissing
		c.Message = fmt.Sprintf("no warm pool in %s: the namespace does not exist or is being deleted (its pool is made when it exists; calls there run cold)",
			strings.Join(missing, ", "))
	}
	return c
}

// writePoolCondition sets (pooled: a Registered ClusterTool with a size) or removes the
// ClusterTool's WarmPool condition when it changed, and warns once per change to
// NamespaceMissing. The registration controller keeps conditions it does not own; a
// conflict means a newer ClusterTool is on its way, whose event brings the pool back.
func (r clusterPools) writePoolCondition(ctx context.Context, tool *v1alpha1.ClusterTool, pooled bool, listed, missing []string) error {
	conds := append([]metav1.Condition(nil), tool.Status.Conditions...)
	changed := false
	if pooled {
		changed = bounds.SetStatusCondition(&conds, poolCondition(tool.Generation, listed, missing))
	} else {
		changed = meta.RemoveStatusCondition(&conds, v1alpha1.ConditionWarmPool)
	}
	if !changed {
		return nil
	}
	tool.Status.Conditions = conds
	if err := r.Status().Update(ctx, tool); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionWarmPool); c != nil && c.Status == metav1.ConditionFalse {
		events.Emit(r.Recorder, tool, corev1.EventTypeWarning, c.Reason, "WarmPool", c.Message)
	}
	return nil
}
