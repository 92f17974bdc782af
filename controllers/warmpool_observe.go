package controllers

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// observeWarm reads a warm attempt's outcome (observe's warm counterpart): from the attach
// stream's result line as soon as the body ended, when it verifies with the Pod's frame key
// and reports a body that exited by itself; otherwise from the Pod as a cold attempt's is
// read (the terminated container's termination message, the kubelet's reasons: the Pod's
// DeadlineExceeded at its activeDeadlineSeconds, OOMKilled, eviction). A Pod gone or
// deleted under the call ends it PodDeleted; the operator's own deadline stays the
// backstop. After a restart (no stream in this process) the Pod is attached again: the
// runner takes one Handover only, so the body never runs twice.
func (r *ToolCallReconciler) observeWarm(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	a := warmAttempt(call)
	pod, err := r.warmPod(ctx, call, a.PodName)
	if err != nil {
		return ctrl.Result{}, err
	}
	run, inFlight := r.warm.get(call.UID)
	if inFlight && run.done && pod != nil {
		if o, ok := r.streamOutcome(ctx, call, pod, run); ok {
			return r.finishWarm(ctx, call, pod, o, sourceStream)
		}
	}
	if inFlight && run.done && run.err != nil && run.stream.HandedOver.IsZero() && pod != nil && !podEnded(pod) {
		// The attach failed before the whole Handover was written: try again, through the
		// controller's rate limiter (the runner takes one whole line only, never two).
		r.warm.forget(call.UID)
		return ctrl.Result{}, fmt.Errorf("handing the arguments to warm Pod %s: %w", pod.Name, run.err)
	}
	past := !r.Clock.Now().Before(r.attemptDeadline(call))
	base := pipeline.Outcome{Attempt: int(a.Attempt), Started: true}
	if pod == nil || (!pod.DeletionTimestamp.IsZero() && !podEnded(pod)) {
		base.TerminationReason = pipeline.TerminationPodDeleted
		if past {
			base.TerminationReason = pipeline.TerminationDeadlineExceeded
		}
		return r.finishWarm(ctx, call, pod, base, sourcePod)
	}
	view := attemptView{Job: &batchv1.Job{}, Pod: pod, Attempt: int(a.Attempt), PastDeadline: past}
	if o, ok := attemptOutcome(ctx, view, r.warmFrameReader(call, pod)); ok {
		return r.finishWarm(ctx, call, pod, o, sourcePod)
	}
	if !inFlight {
		return r.startWarm(ctx, call)
	}
	return ctrl.Result{RequeueAfter: r.attemptDeadline(call).Sub(r.Clock.Now())}, nil
}

// warmPod is the attempt's claimed Pod: from the cache, else (a claim the cache has not
// seen yet, or a Pod gone from it) from the API server; nil when it is gone or is not
// this call's.
func (r *ToolCallReconciler) warmPod(ctx context.Context, call *v1alpha1.ToolCall, name string) (*corev1.Pod, error) {
	key := types.NamespacedName{Namespace: call.Namespace, Name: name}
	pod := &corev1.Pod{}
	err := r.Get(ctx, key, pod)
	if err == nil && pod.Annotations[podcontract.AnnotationClaimedBy] == string(call.UID) {
		return pod, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err := r.APIReader.Get(ctx, key, pod); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if pod.Annotations[podcontract.AnnotationClaimedBy] != string(call.UID) {
		return nil, nil
	}
	return pod, nil
}

// streamOutcome is the outcome the attach stream's result line vouches for: only a
// verified, self-contained frame of a body that exited by itself. A body killed by a
// signal (the kubelet's deadline, an OOM kill) waits for the kubelet's account, which
// names the reason; a pointer frame is read from the Pod log as usual.
func (r *ToolCallReconciler) streamOutcome(ctx context.Context, call *v1alpha1.ToolCall, pod *corev1.Pod, run warmRun) (pipeline.Outcome, bool) {
	msg, ok := frame.LastResultLine(run.stream.StdoutTail)
	if !ok {
		return pipeline.Outcome{}, false
	}
	key, err := r.podFrameKey(ctx, pod)
	if err != nil {
		return pipeline.Outcome{}, false
	}
	f, needLog, err := frame.Decoder{Key: key, MaxOutput: maxOutput(call.Status.Tool.Spec)}.DecodeTermination(msg)
	if err != nil || needLog || f.Signal != "" {
		return pipeline.Outcome{}, false
	}
	return pipeline.Outcome{Attempt: int(currentAttempt(call)), Started: true, Report: reportOf(f)}, true
}

// warmFrameReader reads the termination message with the Pod's own frame key (the pool
// controller put it in the Pod's spec; nothing in the sandbox can change that).
func (r *ToolCallReconciler) warmFrameReader(call *v1alpha1.ToolCall, pod *corev1.Pod) frameReader {
	var tail tailFunc
	if r.Logs != nil {
		tail = withTimeout(r.Options.LogReadTimeout, func(ctx context.Context, lines, limit int64) ([]byte, error) {
			return r.Logs.TailLog(ctx, pod.Namespace, pod.Name, podcontract.ToolContainerName, lines, limit)
		})
	}
	return func(ctx context.Context, msg string) (frame.Frame, error) {
		key, err := r.podFrameKey(ctx, pod)
		if err != nil {
			return frame.Frame{}, err
		}
		return readFrame(ctx, frame.Decoder{Key: key, MaxOutput: maxOutput(call.Status.Tool.Spec)}, msg, tail)
	}
}

// podFrameKey reads the Pod whole (the cache keeps no Pod spec) for its frame key.
func (r *ToolCallReconciler) podFrameKey(ctx context.Context, pod *corev1.Pod) ([]byte, error) {
	live := &corev1.Pod{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(pod), live); err != nil {
		return nil, err
	}
	if live.UID != pod.UID {
		return nil, frame.ErrNoKey
	}
	for _, c := range live.Spec.Containers {
		if c.Name != podcontract.ToolContainerName {
			continue
		}
		for _, e := range c.Env {
			if e.Name == podcontract.EnvFrameKey {
				return frame.ParseKey(e.Value)
			}
		}
	}
	return nil, frame.ErrNoKey
}

// finishWarm records the handover time, finishes the attempt as a cold one is finished,
// and deletes the Pod once its outcome is written: one call per Pod, never reused.
func (r *ToolCallReconciler) finishWarm(ctx context.Context, call *v1alpha1.ToolCall, pod *corev1.Pod, o pipeline.Outcome, source string) (ctrl.Result, error) {
	run, ok := r.warm.get(call.UID)
	if ok && run.done && !run.stream.HandedOver.IsZero() {
		if a := warmAttempt(call); a != nil && a.HandoverTime == nil {
			a.HandoverTime = ptrTime(run.stream.HandedOver)
		}
	}
	res, err := r.finishAttempt(ctx, call, nil, o)
	if err != nil {
		return res, err
	}
	recordWarmRun(ctx, run, source)
	r.warm.forget(call.UID)
	if pod != nil {
		r.deleteWarmPod(ctx, pod)
	}
	return res, nil
}

func (r *ToolCallReconciler) deleteWarmPod(ctx context.Context, pod *corev1.Pod) {
	uid := pod.UID
	if err := r.Delete(ctx, pod, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		ctrl.LoggerFrom(ctx).Error(err, "could not delete a used warm Pod", "pod", pod.Name)
	}
}

// tidyWarmPods deletes the call's claimed Pods whose attempt's outcome is recorded (a
// restart between the outcome's write and finishWarm's delete): no Pod serves twice.
func (r *ToolCallReconciler) tidyWarmPods(ctx context.Context, call *v1alpha1.ToolCall) error {
	if !ranWarm(call) {
		return nil // a cold call costs this nothing
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(call.Namespace), client.MatchingFields{indexCallName: call.Name}); err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Annotations[podcontract.AnnotationClaimedBy] != string(call.UID) || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if !call.Status.Phase.IsTerminal() {
			if call.Status.Phase != v1alpha1.PhaseRunning {
				continue // claimed before a status write a restart lost: claimPod adopts it
			}
			if a := warmAttempt(call); a != nil && a.PodName == p.Name {
				continue // the running attempt's
			}
		}
		r.deleteWarmPod(ctx, p)
	}
	return nil
}

// ranWarm reports whether any of the call's attempts claimed a warm Pod.
func ranWarm(call *v1alpha1.ToolCall) bool {
	for _, a := range call.Status.Attempts {
		if a.Path == v1alpha1.PathWarm {
			return true
		}
	}
	return false
}
