package toolcall

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// TransformToolCall trims a ToolCall before the informer caches it, keeping what the
// reconcilers read:
//   - every call loses metadata.managedFields and kubectl's last-applied-configuration
//     annotation (a second copy of the spec): nothing in the operator reads them;
//   - a terminal call also loses spec.arguments, status.result.content, status.tool's spec
//     and annotations, status.callLabels and its conditions' messages. A terminal call is only read to tidy its
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
	for i := range call.Status.Conditions {
		call.Status.Conditions[i].Message = ""
	}
	return call, nil
}

// stripManagedFields drops metadata.managedFields (as cache.TransformStripManagedFields).
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// TransformJob trims a tool Job before the informer caches it. The operator reads a cached
// Job's metadata (labels, annotations, owner, finalizers, deletion) and its status only:
// its Pod template goes — above all TOOLGATE_ARGS, up to 120 KiB of arguments per Job,
// kept for --job-retention after the call ended (and no key is in it: the tool container
// reads the namespace's frame master from its Secret). Writes from a cached Job are patches
// of its finalizers and deletes (releaseJob, tidyJobs, stopJob), never an update of its spec.
func TransformJob(obj any) (any, error) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return stripManagedFields(obj)
	}
	job.ManagedFields = nil
	job.Spec.Template = corev1.PodTemplateSpec{}
	return job, nil
}

// TransformPod trims a tool Pod before the informer caches it: the operator reads a cached
// Pod's metadata and status only (its outcome: phase, reason, conditions, container
// states, the termination message), never its spec, which carries the arguments again.
func TransformPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return stripManagedFields(obj)
	}
	pod.ManagedFields = nil
	pod.Spec = corev1.PodSpec{NodeName: pod.Spec.NodeName}
	return pod, nil
}
