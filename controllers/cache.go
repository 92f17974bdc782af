package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// TransformToolCall trims a ToolCall before the informer caches it, keeping what the
// reconcilers read:
//   - every call loses metadata.managedFields and kubectl's last-applied-configuration
//     annotation (a second copy of the spec): nothing in the operator reads them;
//   - a terminal call also loses spec.arguments, status.result.content, status.tool's spec
//     and annotations, and status.callLabels. A terminal call is only read to tidy its
//     Jobs (status.attempts, completionTime), to expire it (spec.ttlSecondsAfterFinished,
//     status.expiresAt, completionTime), by the history limit and the active-call gauge
//     (phase, completionTime), and by session scheduling (Done: phase only). Its status is
//     never written from the cache: the CRD's rules would refuse a status without the
//     result it holds, and the reconciler returns before any write for a terminal call.
//
// The API server keeps the whole object: `kubectl get`, the CLI and the gateway read it there.
func TransformToolCall(obj any) (any, error) {
	call, ok := obj.(*v1alpha1.ToolCall)
	if !ok {
		return stripManagedFields(obj)
	}
	call.ManagedFields = nil
	if _, ok := call.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		annotations := make(map[string]string, len(call.Annotations)-1)
		for k, v := range call.Annotations {
			if k != corev1.LastAppliedConfigAnnotation {
				annotations[k] = v
			}
		}
		call.Annotations = annotations
	}
	if !call.Status.Phase.IsTerminal() {
		return call, nil
	}
	call.Spec.Arguments.Raw = nil
	call.Spec.Arguments.Object = nil
	if res := call.Status.Result; res != nil {
		res.Content = nil
	}
	if snap := call.Status.Tool; snap != nil {
		snap.Spec = nil
		snap.Annotations = nil
	}
	call.Status.CallLabels = nil
	return call, nil
}

// stripManagedFields drops metadata.managedFields (as cache.TransformStripManagedFields).
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
