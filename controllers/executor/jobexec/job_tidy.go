package jobexec

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Tidy keeps a call's Jobs exactly as long as they are needed. Tool Jobs carry no
// ttlSecondsAfterFinished (the TTL controller deletes with foreground propagation, which
// removes the Pod, the result's carrier, first: an operator down longer than the TTL would
// find its result gone); the operator deletes them itself:
//   - the Job of the running attempt is never touched: its outcome is not recorded yet;
//   - any other Job of the call (an earlier attempt, or every Job of a terminal call) is
//     kept for JobRetention after its attempt's outcome was recorded, so that `toolgate
//     logs` and `describe` still find its Pod, then deleted with background propagation
//     (the Job goes first, the garbage collector removes the Pod after it);
//   - a Job being deleted loses podspec.JobFinalizer once it is not the running attempt's.
//
// call is nil when the call is gone (its Jobs then go with it, by owner reference). It
// returns how long until the next retained Job is due (0: none).
func (j *Executor) Tidy(ctx context.Context, key types.NamespacedName, call *v1alpha1.ToolCall) (time.Duration, error) {
	namespace, name := key.Namespace, key.Name
	if call == nil {
		j.refusals.forget(key)
	}
	jobs := &batchv1.JobList{}
	if err := j.List(ctx, jobs, client.InNamespace(namespace), client.MatchingFields{executor.IndexCallName: name}); err != nil {
		return 0, err
	}
	var next time.Duration
	now := j.Clock.Now()
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if job.Annotations[podcontract.AnnotationCallName] != name || stillNeeded(job, call) {
			continue
		}
		if !job.DeletionTimestamp.IsZero() {
			if err := j.releaseJob(ctx, job); err != nil {
				return 0, err
			}
			continue
		}
		if call == nil || !metav1.IsControlledBy(job, call) {
			continue
		}
		if wait := recordedAt(call, job).Add(j.retentionOf(ctx, call, job)).Sub(now); wait > 0 {
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		if err := j.deleteRecordedJob(ctx, job); err != nil {
			return 0, err
		}
	}
	return next, nil
}

// deleteRecordedJob deletes a Job whose attempt's outcome is recorded, with background
// propagation, and releases it.
func (j *Executor) deleteRecordedJob(ctx context.Context, job *batchv1.Job) error {
	err := j.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &job.UID})
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("deleted a Job past its retention", "job", job.Name)
	if owner := metav1.GetControllerOf(job); owner != nil {
		j.deleteAttemptKey(ctx, owner.UID, job.Namespace, job.Name)
	}
	return j.releaseJob(ctx, job)
}

// retentionOf is how long job is kept after its attempt's end was recorded: JobRetention,
// but none when its Pod's status may show what the body wrote in its own container's
// termination message, which nobody is to read: an attempt that ended without a result the
// operator could believe (ResultUnreadable, ExecutionLost: a body that killed the runner's
// side before it could empty it), or a Pod whose body container shows a message (a body
// killed before its runner's side emptied it: the OOM killer, the deadline's SIGKILL).
func (j *Executor) retentionOf(ctx context.Context, call *v1alpha1.ToolCall, job *batchv1.Job) time.Duration {
	for _, a := range call.Status.Attempts {
		if a.JobName == job.Name && unbelievedEndings[pipeline.Reason(a.Reason)] {
			return 0
		}
	}
	if j.bodyMessageShown(ctx, job) {
		return 0
	}
	return j.Options.JobRetention
}

// bodyMessageShown reports whether a Pod of job (from the cache) shows a termination
// message in the body's container.
func (j *Executor) bodyMessageShown(ctx context.Context, job *batchv1.Job) bool {
	pods := &corev1.PodList{}
	err := j.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingFields{executor.IndexCallName: job.Annotations[podcontract.AnnotationCallName]})
	if err != nil {
		return false
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if cs := podspec.ToolContainerStatus(p); metav1.IsControlledBy(p, job) && cs != nil && cs.State.Terminated != nil && cs.State.Terminated.Message != "" {
			return true
		}
	}
	return false
}

// unbelievedEndings are the attempt reasons whose Pods are deleted at once.
var unbelievedEndings = map[pipeline.Reason]bool{pipeline.ReasonResultUnreadable: true, pipeline.ReasonExecutionLost: true}

// releaseJob removes podspec.JobFinalizer from a Job.
func (j *Executor) releaseJob(ctx context.Context, job *batchv1.Job) error {
	if !controllerutil.ContainsFinalizer(job, podspec.JobFinalizer) {
		return nil
	}
	patch := client.MergeFrom(job.DeepCopy())
	controllerutil.RemoveFinalizer(job, podspec.JobFinalizer)
	return client.IgnoreNotFound(j.Patch(ctx, job, patch))
}

// stillNeeded reports whether job is the running attempt's: the call is not terminal nor
// being deleted, and its outcome for that Job is not recorded yet.
func stillNeeded(job *batchv1.Job, call *v1alpha1.ToolCall) bool {
	return call != nil && !call.Status.Phase.IsTerminal() && call.DeletionTimestamp.IsZero() &&
		call.Status.Job != nil && call.Status.Job.Name == job.Name
}

// recordedAt is when the outcome of job's attempt was recorded: the attempt's completion
// time, else the call's (a call ended by the operator itself), else the Job's creation.
func recordedAt(call *v1alpha1.ToolCall, job *batchv1.Job) time.Time {
	for _, a := range call.Status.Attempts {
		if a.JobName == job.Name && a.CompletionTime != nil {
			return a.CompletionTime.Time
		}
	}
	if call.Status.CompletionTime != nil {
		return call.Status.CompletionTime.Time
	}
	return job.CreationTimestamp.Time
}
