// Package jobexec is the Job executor (an executor.Executor): an attempt runs in a Job made
// for it, the cold path that takes every attempt no other executor claimed. It returns what
// its steps came to; the ToolCall reconciler writes the call's status.
package jobexec

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/executor/execenv"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/controllers/netisolation"
	"github.com/toolgate/toolgate/controllers/startgate"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/internal/tracing"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Executor runs an attempt in a Job made for it (the cold path): one Job per attempt,
// under a deterministic name, owned by the call and held by podspec.JobFinalizer until its end is
// recorded. It takes every attempt no other executor claimed.
type Executor struct {
	execenv.Env
	refusals refusals
	// slots is the operator's start bound (--max-concurrent-starts), shared by every call.
	slots *startgate.Slots
}

// New is the Job executor of env.
func New(env execenv.Env) *Executor {
	return &Executor{Env: env, slots: startgate.NewSlots(env.Client, env.Options.Admission.MaxConcurrentStarts)}
}

// Path is "": the Job executor runs the attempts recorded without a path.
func (j *Executor) Path() v1alpha1.ExecutionPath { return "" }

// Supports is every feature: a Pod made for the attempt can be prepared for any.
func (j *Executor) Supports() executor.FeatureSet { return feature.Names }

// Claim takes the attempt: its Job is named after the call and the attempt.
func (j *Executor) Claim(_ context.Context, call *v1alpha1.ToolCall, a *v1alpha1.Attempt) (string, bool) {
	a.JobName = podspec.JobName(call.Name, a.Attempt)
	call.Status.Job = &v1alpha1.JobReference{Name: a.JobName}
	return "Job " + a.JobName, true
}

// Start creates the current attempt's Job, or adopts it when it already exists (a restart
// between the status write and the create): one Job per attempt, whatever happens.
func (j *Executor) Start(ctx context.Context, call *v1alpha1.ToolCall) (executor.Step, error) {
	attempt := executor.CurrentAttempt(call)
	frozen, err := j.FrozenArguments(call)
	if err != nil {
		return executor.Internal("the frozen arguments could not be reproduced"), nil
	}
	// A burst queues rather than starting every sandbox at once (controllers/startgate).
	admission, err := startgate.Resolve(ctx, j.Client, call, j.Options.Admission)
	if err != nil {
		return executor.Step{}, err
	}
	deadline := j.startDeadline(call, admission)
	if !j.Clock.Now().Before(deadline) {
		return j.tooLate(ctx, call, attempt), nil
	}
	// The features the tool uses prepare the Pod's input (the egress proxy's grant).
	in := podspec.Input{Call: call, Tool: call.Status.Tool.Spec, Arguments: frozen.Canonical(),
		Digest: frozen.Digest(), Attempt: attempt, Traceparent: tracing.ExecutionTraceparent(ctx, int(attempt)), Admission: admission}
	if st, ok, err := j.Features.PrepareInput(ctx, call, attempt, &in); !ok {
		return st, err
	}
	job := podspec.BuildJob(in, j.Options.Job)
	if err := controllerutil.SetControllerReference(call, job, j.Scheme); err != nil {
		return executor.Step{}, err
	}
	if why, err := j.Isolate(ctx, call, job.Spec.Template.Labels); err != nil || why != "" {
		return netisolation.Refuse(why), err
	}
	// The Pod's signer reads the attempt's key from a Secret of its own, made from the
	// namespace's master: both must exist first.
	masters, st, ok, err := j.FrameKeyReady(ctx, call)
	if !ok {
		return st, err
	}
	if err := j.ensureAttemptKey(ctx, call, job.Name, attempt, masters[0]); err != nil {
		return executor.Step{}, err
	}
	// Then they prepare the built Pod (a session workspace's claim, made on first use).
	pod := feature.Pod{Spec: &job.Spec.Template.Spec, Labels: []map[string]string{job.Labels, job.Spec.Template.Labels}}
	if st, ok, err := j.Features.PreparePod(ctx, call, pod); !ok {
		return st, err
	}
	if err := j.holdForTest(ctx, call); err != nil {
		return executor.Step{}, err
	}
	begun := j.Clock.Now()
	err = j.Create(ctx, job)
	metrics.StageDuration.WithLabelValues("job_create").Observe(j.Clock.Since(begun).Seconds())
	switch {
	case err == nil:
		j.refusals.forget(client.ObjectKeyFromObject(call))
		metrics.JobsCreated.WithLabelValues(executor.MetricTool(call)).Inc()
		ctrl.LoggerFrom(ctx).Info("created Job", "job", job.Name, "attempt", attempt)
	case apierrors.IsAlreadyExists(err):
		existing := &batchv1.Job{}
		if err := j.APIReader.Get(ctx, client.ObjectKeyFromObject(job), existing); err != nil {
			return executor.Step{}, err
		}
		j.refusals.forget(client.ObjectKeyFromObject(call))
		if !metav1.IsControlledBy(existing, call) {
			return executor.Internal("a Job named " + job.Name + " exists and belongs to something else"), nil
		}
	default:
		return j.createRefused(ctx, call, job.Name, deadline, err)
	}
	return executor.Step{Requeue: deadline.Sub(j.Clock.Now())}, nil
}

// startDeadline is the latest the attempt's Job may still be created: the attempt's
// deadline; for a Job that will wait for admission, the latest that attempt can end (its
// admission not known yet: executor.AdmittedDeadline), as jobDeadline counts once the Job
// exists and the features' deadline counts (toolcall's attemptDeadline). The tool's
// timeout is never spent before admission, a Job created late included.
func (j *Executor) startDeadline(call *v1alpha1.ToolCall, a *podspec.Admission) time.Time {
	if a == nil {
		return executor.AttemptDeadline(call, j.Clock.Now(), j.Options.JobGrace())
	}
	return executor.AdmittedDeadline(call, time.Time{}, maxWaitOf(*a), j.Clock.Now(), j.Options.JobGrace())
}

// createRefused decides what a refused Job create means. An object the API server will
// never accept ends the call at once; any other refusal (a quota, an admission policy or
// webhook, a timeout, an unavailable API server) is retried through the rate limiter until
// MaxCreateRefusals or the attempt's deadline, and then ends the call. Either way the call
// ends Failed ExecutionRejected with the API server's message: it never stays Running.
func (j *Executor) createRefused(ctx context.Context, call *v1alpha1.ToolCall, jobName string, deadline time.Time, err error) (executor.Step, error) {
	n := j.refusals.add(call, executor.CurrentAttempt(call), err)
	if !persistentCreateError(err) && n < MaxCreateRefusals && j.Clock.Now().Before(deadline) {
		ctrl.LoggerFrom(ctx).Info("Job create refused; retrying", "job", jobName, "refusals", n, "error", err.Error())
		return executor.Step{}, err
	}
	return j.rejected(call, jobName, err), nil
}

// noJobDetail is the Executed condition's account of an attempt that ends ImageNeverStarted
// because its Job was never created: the image is not to blame.
const noJobDetail = "operator: no Job was created for this attempt before its deadline (the operator was down, restarting or could not reach the API server); the image was never tried"

// tooLate ends an attempt whose deadline passed before its Job was created: with the API
// server's last refusal when it refused (ExecutionRejected), else as a body that never
// started (the operator was down between recording the attempt and creating its Job).
// Either way the Job is not created: a body never starts after its deadline. A feature
// may say better why (a session claim that never bound: feature.EndingClassifier).
func (j *Executor) tooLate(ctx context.Context, call *v1alpha1.ToolCall, attempt int32) executor.Step {
	if err := j.refusals.last(call, attempt); err != nil {
		return j.rejected(call, podspec.JobName(call.Name, attempt), err)
	}
	o := pipeline.Outcome{TerminationReason: pipeline.TerminationDeadlineExceeded, Attempt: int(attempt), Detail: noJobDetail}
	if st, ok := j.Features.ClassifyEnding(ctx, call, o); ok {
		return st
	}
	return executor.Step{Outcome: &o}
}

func (j *Executor) rejected(call *v1alpha1.ToolCall, jobName string, err error) executor.Step {
	j.refusals.forget(types.NamespacedName{Namespace: call.Namespace, Name: call.Name})
	return executor.Refuse(rejectedRefusal(call, jobName, err))
}

// Observe reads the running attempt's outcome: from the Pod's terminated container as soon
// as the kubelet reports it (not the Job's later condition), and from the Job for what only
// the Job knows (DeadlineExceeded, deletion). The operator's own deadline is the backstop.
func (j *Executor) Observe(ctx context.Context, call *v1alpha1.ToolCall) (executor.Step, error) {
	if call.Status.Job == nil {
		return executor.Internal("the call is running without a Job"), nil
	}
	key := types.NamespacedName{Namespace: call.Namespace, Name: call.Status.Job.Name}
	job := &batchv1.Job{}
	if err := j.Get(ctx, key, job); err != nil {
		if !apierrors.IsNotFound(err) {
			return executor.Step{}, err
		}
		// The cache may not hold our own create yet: ask the API server. A Job that was
		// deleted is held by podspec.JobFinalizer until its end is recorded, so a Job that is truly
		// absent was never created (a restart between the status write and the create).
		if err := j.APIReader.Get(ctx, key, job); apierrors.IsNotFound(err) {
			return j.Start(ctx, call)
		} else if err != nil {
			return executor.Step{}, err
		}
	}
	pod, err := j.attemptPod(ctx, false, call, job)
	if err != nil {
		return executor.Step{}, err
	}
	if st, waiting, err := j.waitForAdmission(ctx, call, job, pod); waiting || err != nil {
		return st, err
	}
	if !PodEnded(pod) && jobEnded(job) {
		// The Job's informer can deliver its end before the Pod's informer delivers the
		// status it was computed from: read the Pod from the API server before concluding.
		if pod, err = j.attemptPod(ctx, true, call, job); err != nil {
			return executor.Step{}, err
		}
	}
	now := j.Clock.Now()
	deadline := j.jobDeadline(call, job)
	view := AttemptView{Job: job, Pod: pod, Attempt: int(executor.CurrentAttempt(call)),
		PastDeadline: !now.Before(deadline), Now: now, Features: j.Features}
	read := j.Trust(call).PodReader(pod, j.Logs, j.Options.LogReadTimeout)
	if o, ok := AttemptOutcome(ctx, view, read); ok {
		if st, ok := j.Features.ClassifyEnding(ctx, call, o); ok {
			return st, nil
		}
		return executor.Step{Outcome: &o, ContainerStart: containerStartTime(pod)}, nil
	}
	wait := deadline.Sub(now)
	if pending := SignerPending(pod, now); pending > 0 {
		wait = pending
	}
	if retry := j.featuresRunning(ctx, call, pod); retry > 0 {
		wait = min(wait, retry)
	}
	return executor.Step{Requeue: wait}, nil
}

// attemptPod finds the Pod of the attempt's Job (from the cache, by labels).
// live reads the API server instead of the cache (by labels: it has no field index).
func (j *Executor) attemptPod(ctx context.Context, live bool, call *v1alpha1.ToolCall, job *batchv1.Job) (*corev1.Pod, error) {
	pods := &corev1.PodList{}
	var reader client.Reader = j.Client
	selector := client.ListOption(client.MatchingFields{executor.IndexCallName: call.Name})
	if live {
		reader = j.APIReader
		selector = client.MatchingLabels{podcontract.LabelCall: podspec.CallLabelValue(call.Name), podcontract.LabelAttempt: job.Labels[podcontract.LabelAttempt]}
	}
	if err := reader.List(ctx, pods, client.InNamespace(call.Namespace), selector); err != nil {
		return nil, err
	}
	var found *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if !metav1.IsControlledBy(p, job) {
			continue
		}
		if cs := podspec.ToolContainerStatus(p); cs != nil && cs.State.Terminated != nil {
			return p, nil
		}
		found = p
	}
	return found, nil
}

// Stop deletes the running attempt's Job, foreground: the garbage collector deletes its Pod
// before the Job, and the body gets SIGTERM now (it may run on for its grace period: the
// caller waits for the Pod, toolcall_stopping.go). A Job that is absent (never created) or
// already being deleted needs nothing. The cache may not hold a Job created a moment ago
// (a call cancelled right after it started): absent there, it is read from the API server.
// Its podspec.JobFinalizer is released by tidy once the call is terminal.
func (j *Executor) Stop(ctx context.Context, call *v1alpha1.ToolCall) (string, error) {
	if call.Status.Job == nil {
		return "", nil
	}
	name := call.Status.Job.Name
	key := types.NamespacedName{Namespace: call.Namespace, Name: name}
	job := &batchv1.Job{}
	err := j.Get(ctx, key, job)
	if apierrors.IsNotFound(err) {
		err = j.APIReader.Get(ctx, key, job)
	}
	if err == nil && job.DeletionTimestamp.IsZero() {
		err = j.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationForeground),
			client.Preconditions{UID: &job.UID})
		if err == nil {
			ctrl.LoggerFrom(ctx).Info("deleted the Job of a cancelled call", "job", job.Name)
		}
	}
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return "", err
	}
	return "Job " + name + " deleted", nil
}

// Release deletes a Job whose Pod will not end by itself (an image that is never pulled,
// the operator's own deadline). Jobs that ended are kept for the retention (tidy).
func (j *Executor) Release(ctx context.Context, call *v1alpha1.ToolCall, ended v1alpha1.Attempt, o pipeline.Outcome) {
	if ended.JobName == "" {
		return
	}
	j.deleteAttemptKey(ctx, call.UID, call.Namespace, ended.JobName)
	if o.Started && o.TerminationReason != pipeline.TerminationDeadlineExceeded {
		return
	}
	job := &batchv1.Job{}
	if err := j.Get(ctx, types.NamespacedName{Namespace: call.Namespace, Name: ended.JobName}, job); err != nil {
		return // not in the cache (never created, or gone): nothing to stop
	}
	if !job.DeletionTimestamp.IsZero() || jobFailedReason(job) != "" || jobComplete(job) {
		return
	}
	if err := j.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		ctrl.LoggerFrom(ctx).Error(err, "could not delete a stopped Job", "job", job.Name)
	}
}

// containerStartTime is when pod's tool container started (zero: unknown).
func containerStartTime(pod *corev1.Pod) time.Time {
	if pod == nil {
		return time.Time{}
	}
	switch cs := podspec.ToolContainerStatus(pod); {
	case cs == nil:
	case cs.State.Terminated != nil:
		return cs.State.Terminated.StartedAt.Time
	case cs.State.Running != nil:
		return cs.State.Running.StartedAt.Time
	}
	return time.Time{}
}

// featuresRunning tells the features the tool uses of its Pod while it runs (an egress
// grant is bound to the Pod's address): how soon they want to be told again (0: no sooner).
func (j *Executor) featuresRunning(ctx context.Context, call *v1alpha1.ToolCall, pod *corev1.Pod) time.Duration {
	if pod == nil || PodEnded(pod) {
		return 0
	}
	return j.Features.Running(ctx, call, pod)
}
