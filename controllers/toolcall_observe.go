package controllers

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

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// observe reads the running attempt's outcome: from the Pod's terminated container as soon
// as the kubelet reports it (not the Job's later condition), and from the Job for what only
// the Job knows (DeadlineExceeded, deletion). The operator's own deadline is the backstop.
func (r *ToolCallReconciler) observe(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	if warmAttempt(call) != nil && call.Status.Tool != nil && call.Status.Tool.Spec != nil {
		return r.observeWarm(ctx, call)
	}
	if call.Status.Job == nil || call.Status.Tool == nil || call.Status.Tool.Spec == nil {
		return r.finishInternal(ctx, call, "the call is running without a Job or tool snapshot")
	}
	key := types.NamespacedName{Namespace: call.Namespace, Name: call.Status.Job.Name}
	job := &batchv1.Job{}
	if err := r.Get(ctx, key, job); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// The cache may not hold our own create yet: ask the API server. A Job that was
		// deleted is held by JobFinalizer until its end is recorded, so a Job that is truly
		// absent was never created (a restart between the status write and the create).
		if err := r.APIReader.Get(ctx, key, job); apierrors.IsNotFound(err) {
			return r.createJob(ctx, call)
		} else if err != nil {
			return ctrl.Result{}, err
		}
	}
	pod, err := r.attemptPod(ctx, false, call, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !podEnded(pod) && jobEnded(job) {
		// The Job's informer can deliver its end before the Pod's informer delivers the
		// status it was computed from: read the Pod from the API server before concluding.
		if pod, err = r.attemptPod(ctx, true, call, job); err != nil {
			return ctrl.Result{}, err
		}
	}
	view := attemptView{Job: job, Pod: pod, Attempt: int(currentAttempt(call)),
		PastDeadline: !r.Clock.Now().Before(r.attemptDeadline(call))}
	read := frameReaderFor(call.Status.Tool.Spec, job, pod, r.Logs, r.Options.LogReadTimeout)
	if o, ok := attemptOutcome(ctx, view, read); ok {
		if o.Unreadable != "" {
			ctrl.LoggerFrom(ctx).Info("the tool's frame cannot be trusted", "job", job.Name, "error", o.Unreadable)
		}
		return r.finishAttempt(withContainerStart(ctx, pod), call, job, o)
	}
	return ctrl.Result{RequeueAfter: r.attemptDeadline(call).Sub(r.Clock.Now())}, nil
}

// attemptPod finds the Pod of the attempt's Job (from the cache, by labels).
// live reads the API server instead of the cache (by labels: it has no field index).
func (r *ToolCallReconciler) attemptPod(ctx context.Context, live bool, call *v1alpha1.ToolCall, job *batchv1.Job) (*corev1.Pod, error) {
	pods := &corev1.PodList{}
	var reader client.Reader = r.Client
	selector := client.ListOption(client.MatchingFields{indexCallName: call.Name})
	if live {
		reader = r.APIReader
		selector = client.MatchingLabels{podcontract.LabelCall: CallLabelValue(call.Name), podcontract.LabelAttempt: job.Labels[podcontract.LabelAttempt]}
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
		if cs := toolContainerStatus(p); cs != nil && cs.State.Terminated != nil {
			return p, nil
		}
		found = p
	}
	return found, nil
}

// attemptDeadline is when the operator ends an attempt nobody reported on: the attempt's
// start plus the tool's timeout plus a grace for Pod start-up and status propagation.
func (r *ToolCallReconciler) attemptDeadline(call *v1alpha1.ToolCall) time.Time {
	start := r.Clock.Now()
	if n := len(call.Status.Attempts); n > 0 && call.Status.Attempts[n-1].StartTime != nil {
		start = call.Status.Attempts[n-1].StartTime.Time
	}
	timeout := time.Duration(timeoutSeconds(call.Status.Tool.Spec)) * time.Second
	return start.Add(timeout + r.Options.DeadlineGrace)
}

func toolContainerStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == podcontract.ToolContainerName {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// containerStarted reports whether the tool container ever ran.
func containerStarted(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	cs := toolContainerStatus(pod)
	return cs != nil && (cs.State.Running != nil || cs.State.Terminated != nil && !neverCreated(cs) ||
		cs.LastTerminationState.Terminated != nil || (cs.Started != nil && *cs.Started))
}

// containerStatusUnknown is the reason the kubelet gives a container it has no runtime
// status for when the Pod ends (k8s.io/kubernetes/pkg/kubelet/container).
const containerStatusUnknown = "ContainerStatusUnknown"

// neverCreated: the tool container's terminated state is the kubelet's stand-in for a
// container the runtime never created. When a Pod ends while a container still waits (an
// image that cannot be pulled, at the Job's deadline), the kubelet's status manager
// replaces the waiting state with Terminated{ContainerStatusUnknown, exit 137} and keeps
// the rest of the old status: no container ID, no start time. Any container the runtime
// created has an ID in its status, so the body cannot have run.
func neverCreated(cs *corev1.ContainerStatus) bool {
	t := cs.State.Terminated
	return t != nil && t.Reason == containerStatusUnknown && cs.ContainerID == "" && t.StartedAt.IsZero()
}

func jobFailedReason(job *batchv1.Job) string {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			if c.Reason == "" {
				return "JobFailed"
			}
			return c.Reason
		}
	}
	return ""
}

// podEnded reports whether the Pod shows an outcome podOutcome can read.
func podEnded(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	if cs := toolContainerStatus(pod); cs != nil && cs.State.Terminated != nil {
		return true
	}
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

// jobEnded reports whether the Job is finished or going away.
func jobEnded(job *batchv1.Job) bool {
	return !job.DeletionTimestamp.IsZero() || jobFailedReason(job) != "" || jobComplete(job)
}

func jobComplete(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
