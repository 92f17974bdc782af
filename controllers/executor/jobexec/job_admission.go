package jobexec

import (
	"context"
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/startgate"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
)

// EventNotAdmitted is the Warning event of a call whose Job waited past its bound.
const EventNotAdmitted = "NotAdmitted"

// slotPoll is how soon a Job waiting for one of the operator's start slots looks again: a
// slot frees when another call's tool container starts, which wakes only that call.
const slotPoll = time.Second

// jobDeadline is when the operator ends the attempt of job if nobody reported on it: from
// the attempt's start for a Job that started at once, from its admission for one that
// waited (executor.AdmittedDeadline), so the tool's timeout is never spent waiting.
// Both add options.Call.JobGrace (the start allowance and the operator's grace).
func (j *Executor) jobDeadline(call *v1alpha1.ToolCall, job *batchv1.Job) time.Time {
	a, gated := podspec.JobAdmission(job)
	if !gated {
		return executor.AttemptDeadline(call, j.Clock.Now(), j.Options.JobGrace())
	}
	var admitted time.Time
	if !podspec.JobSuspended(job) && job.Status.StartTime != nil {
		admitted = job.Status.StartTime.Time
	}
	return executor.AdmittedDeadline(call, admitted, maxWaitOf(a), j.Clock.Now(), j.Options.JobGrace())
}

// waitForAdmission handles an attempt whose Job waits, suspended and without a Pod, for
// admission: past its bound the Job is deleted and the call refused NotAdmitted; before it,
// a Job behind the operator's bound is resumed when a slot is free, and the step says the
// attempt waits. waiting false: the Job is not waiting (it never was, or was admitted; or
// it is being deleted before its bound, which Observe reads as any deleted Job).
func (j *Executor) waitForAdmission(ctx context.Context, call *v1alpha1.ToolCall, job *batchv1.Job, pod *corev1.Pod) (st executor.Step, waiting bool, err error) {
	a, gated := podspec.JobAdmission(job)
	if !gated || !podspec.JobSuspended(job) || pod != nil {
		return executor.Step{}, false, nil
	}
	a.MaxWait = maxWaitOf(a)
	now := j.Clock.Now()
	bound := startgate.WaitBound(executor.AttemptStart(call, job.CreationTimestamp.Time), a)
	if !now.Before(bound) {
		st, err := j.notAdmitted(ctx, call, job, a)
		return st, true, err
	}
	if !job.DeletionTimestamp.IsZero() {
		return executor.Step{}, false, nil
	}
	wait := bound.Sub(now)
	if a.Queue == "" {
		v, err := j.slots.Decide(ctx, job, j.resume)
		if err != nil {
			return executor.Step{}, true, err
		}
		if v.Resume {
			ctrl.LoggerFrom(ctx).Info("resumed a Job: a start slot is free", "job", job.Name, "starting", v.Starting)
		}
		wait = min(wait, slotPoll)
	}
	msg := startgate.Describe(a, j.Options.Admission.MaxConcurrentStarts)
	return executor.Step{Waiting: &executor.Waiting{Message: msg}, Requeue: wait}, true, nil
}

// resume lets the Job start (the operator's start bound): a merge patch of spec.suspend
// only, since the cached Job carries no Pod template.
func (j *Executor) resume(ctx context.Context, job *batchv1.Job) error {
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"suspend":false}}`))
	return client.IgnoreNotFound(j.Patch(ctx, job.DeepCopy(), patch))
}

// notAdmitted ends an attempt whose Job waited past its bound: the Job is deleted (its
// podspec.JobFinalizer is released by tidy once the call is terminal), its key Secret too,
// and the call refused NotAdmitted — never DeadlineExceeded: the body never ran. Idempotent:
// a restart between the delete and the status write finds the Job being deleted, still
// suspended, past its bound, and comes here again.
func (j *Executor) notAdmitted(ctx context.Context, call *v1alpha1.ToolCall, job *batchv1.Job, a podspec.Admission) (executor.Step, error) {
	if job.DeletionTimestamp.IsZero() {
		err := j.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &job.UID})
		if client.IgnoreNotFound(err) != nil {
			return executor.Step{}, err
		}
		ctrl.LoggerFrom(ctx).Info("deleted a Job that was not admitted in time", "job", job.Name, "queue", a.Queue, "maxWait", a.MaxWait.String())
	}
	j.deleteAttemptKey(ctx, call.UID, call.Namespace, job.Name)
	by := "the operator's start bound (--max-concurrent-starts)"
	if a.Queue != "" {
		by = "Kueue LocalQueue " + a.Queue
	}
	detail := fmt.Sprintf("the Job %s was not admitted by %s within %s; it was deleted and the body never ran", job.Name, by, a.MaxWait)
	return executor.Refuse(executor.Refusal{Reason: v1alpha1.ReasonNotAdmitted, Message: startgate.NotAdmittedMessage(a.MaxWait), Detail: detail,
		Meta:  map[string]string{pipeline.MetaAttempt: strconv.Itoa(int(executor.CurrentAttempt(call)))},
		Event: &executor.Event{Type: corev1.EventTypeWarning, Reason: EventNotAdmitted, Action: "Admit", Note: detail}}), nil
}

// maxWaitOf is the Job's recorded bound (the default when it carries none readable).
func maxWaitOf(a podspec.Admission) time.Duration {
	if a.MaxWait <= 0 {
		return startgate.DefaultMaxWait
	}
	return a.MaxWait
}
