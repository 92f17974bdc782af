package controllers

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// releaseJobs removes JobFinalizer from a call's Jobs that are being deleted and no longer
// needed to observe the call: the call is gone or terminal, or the Job is an earlier attempt.
// The Job of a running attempt keeps it until its end (JobDeleted) is recorded.
func (r *ToolCallReconciler) releaseJobs(ctx context.Context, namespace, name string, call *v1alpha1.ToolCall) error {
	jobs := &batchv1.JobList{}
	if err := r.List(ctx, jobs, client.InNamespace(namespace), client.MatchingFields{indexCallName: name}); err != nil {
		return err
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if job.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(job, JobFinalizer) ||
			job.Annotations[AnnotationCallName] != name || stillNeeded(job, call) {
			continue
		}
		patch := client.MergeFrom(job.DeepCopy())
		controllerutil.RemoveFinalizer(job, JobFinalizer)
		if err := r.Patch(ctx, job, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

func stillNeeded(job *batchv1.Job, call *v1alpha1.ToolCall) bool {
	return call != nil && !call.Status.Phase.IsTerminal() && call.DeletionTimestamp.IsZero() &&
		call.Status.Job != nil && call.Status.Job.Name == job.Name
}
