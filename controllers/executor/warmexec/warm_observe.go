package warmexec

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/executor/frametrust"
	"github.com/toolgate/toolgate/controllers/executor/jobexec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Observe reads a warm attempt's outcome: from the attach stream's result line as soon as
// the body ended, when it verifies for the call's attempt and arguments and reports a body that exited
// by itself; otherwise from the Pod as a cold attempt's is read (the terminated
// container's termination message, the kubelet's reasons: the Pod's DeadlineExceeded at
// its activeDeadlineSeconds, OOMKilled, eviction). A Pod gone or deleted under the call
// ends it PodDeleted; the operator's own deadline stays the backstop. After a restart (no
// stream in this process) the Pod is attached again: the runner takes one Handover only,
// so the body never runs twice.
func (w *Executor) Observe(ctx context.Context, call *v1alpha1.ToolCall) (executor.Step, error) {
	a := executor.Current(call)
	pod, err := w.warmPod(ctx, call, a.PodName)
	if err != nil {
		return executor.Step{}, err
	}
	run, inFlight := w.runs.Get(call.UID)
	if inFlight && run.Done && pod != nil {
		if o, ok := w.streamOutcome(ctx, call, run); ok {
			return w.ended(call, o, sourceStream), nil
		}
	}
	if inFlight && run.Done && run.Err != nil && run.Result.HandedOver.IsZero() && pod != nil && !jobexec.PodEnded(pod) {
		// The attach failed before the whole Handover was written: try again, through the
		// controller's rate limiter (the runner takes one whole line only, never two).
		w.runs.Forget(call.UID)
		return executor.Step{}, fmt.Errorf("handing the arguments to warm Pod %s: %w", pod.Name, run.Err)
	}
	now := w.Clock.Now()
	past := !now.Before(w.AttemptDeadline(call))
	if inFlight && !run.Done && !past && pod != nil && jobexec.PodEnded(pod) {
		// The container ended, so its attach stream is ending too, and its end wakes the call
		// (warmRuns.start): wait for it, so that the outcome is read with the stream's result
		// line, handover time and figures, whichever event came first.
		return executor.Step{Requeue: time.Second}, nil
	}
	base := pipeline.Outcome{Attempt: int(a.Attempt), Started: true}
	if pod == nil || (!pod.DeletionTimestamp.IsZero() && !jobexec.PodEnded(pod)) {
		base.TerminationReason = pipeline.TerminationPodDeleted
		if past {
			base.TerminationReason = pipeline.TerminationDeadlineExceeded
		}
		return w.ended(call, base, sourcePod), nil
	}
	view := jobexec.AttemptView{Job: &batchv1.Job{}, Pod: pod, Attempt: int(a.Attempt), PastDeadline: past, Now: now, Features: w.Features}
	if o, ok := jobexec.AttemptOutcome(ctx, view, w.frameReader(call, pod)); ok {
		return w.ended(call, o, sourcePod), nil
	}
	if !inFlight {
		return w.Start(ctx, call)
	}
	if wait := jobexec.SignerPending(pod, now); wait > 0 {
		return executor.Step{Requeue: wait}, nil
	}
	return executor.Step{Requeue: w.AttemptDeadline(call).Sub(w.Clock.Now())}, nil
}

// ended is the step of an attempt whose outcome o was read from source: the handover time
// goes into the attempt (in memory: finishing it writes it), the source into the run for
// release's figures.
func (w *Executor) ended(call *v1alpha1.ToolCall, o pipeline.Outcome, source string) executor.Step {
	// Read the run again: its stream may have ended since observe looked (the Pod's end can
	// reach the informer before the attach goroutine records the stream's).
	if run, _ := w.runs.Get(call.UID); run.Done && !run.Result.HandedOver.IsZero() && executor.Current(call).HandoverTime == nil {
		a := executor.Current(call)
		a.HandoverTime = &metav1.Time{Time: run.Result.HandedOver}
	}
	w.runs.Note(call.UID, true, func(n *string) { *n = source })
	return executor.Step{Outcome: &o}
}

// warmPod is the attempt's claimed Pod: from the cache, else (a claim the cache has not
// seen yet, or a Pod gone from it) from the API server; nil when it is gone or is not
// this call's.
func (w *Executor) warmPod(ctx context.Context, call *v1alpha1.ToolCall, name string) (*corev1.Pod, error) {
	key := types.NamespacedName{Namespace: call.Namespace, Name: name}
	pod := &corev1.Pod{}
	err := w.Get(ctx, key, pod)
	if err == nil && pod.Annotations[podcontract.AnnotationClaimedBy] == string(call.UID) {
		return pod, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err := w.APIReader.Get(ctx, key, pod); apierrors.IsNotFound(err) {
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
// self-contained frame of a body that exited by itself, verified for the call's attempt and
// arguments (frametrust.Trust). A body killed by a
// signal (the kubelet's deadline, an OOM kill) waits for the kubelet's account, which
// names the reason; a pointer frame is read from the Pod log as usual.
func (w *Executor) streamOutcome(ctx context.Context, call *v1alpha1.ToolCall, run warmRun) (pipeline.Outcome, bool) {
	msg, ok := frame.LastResultLine(run.Result.StdoutTail)
	if !ok {
		return pipeline.Outcome{}, false
	}
	f, _, needLog, err := w.Trust(call).Termination(ctx, msg)
	if err != nil || needLog || f.Signal != "" || f.Reason == frame.ReasonBodyLost {
		// BodyLost vouches for no run: the kubelet's account of the Pod decides.
		return pipeline.Outcome{}, false
	}
	return pipeline.Outcome{Attempt: int(executor.CurrentAttempt(call)), Started: true, Report: jobexec.ReportOf(f)}, true
}

// frameReader reads the claimed Pod's termination message (and log) as a cold Pod's: with
// the key derived for the call's attempt, for the call's arguments.
func (w *Executor) frameReader(call *v1alpha1.ToolCall, pod *corev1.Pod) frametrust.Reader {
	return w.Trust(call).PodReader(pod, w.Logs, w.Options.LogReadTimeout)
}

// Release deletes the attempt's Pod once its outcome is written (one call per Pod, never
// reused) and reports how the attempt spent its time.
func (w *Executor) Release(ctx context.Context, call *v1alpha1.ToolCall, ended v1alpha1.Attempt, _ pipeline.Outcome) {
	run, _ := w.runs.Get(call.UID)
	recordWarmRun(ctx, run, run.Note)
	w.runs.Forget(call.UID)
	pod := &corev1.Pod{}
	if err := w.Get(ctx, types.NamespacedName{Namespace: call.Namespace, Name: ended.PodName}, pod); err != nil {
		return // not in the cache: gone already, or tidy finds it on a later pass
	}
	if pod.Annotations[podcontract.AnnotationClaimedBy] == string(call.UID) {
		w.deleteWarmPod(ctx, pod)
	}
}

// Stop deletes the warm Pod a cancelled call's running attempt claimed (the body stops now;
// the Pod is never used again) and forgets its handover. A Pod already gone needs nothing;
// one the cache has not seen yet is read from the API server.
func (w *Executor) Stop(ctx context.Context, call *v1alpha1.ToolCall) (string, error) {
	name := executor.Current(call).PodName
	w.runs.Forget(call.UID)
	key := types.NamespacedName{Namespace: call.Namespace, Name: name}
	pod := &corev1.Pod{}
	err := w.Get(ctx, key, pod)
	if apierrors.IsNotFound(err) {
		err = w.APIReader.Get(ctx, key, pod)
	}
	if client.IgnoreNotFound(err) != nil {
		return "", err
	}
	if err == nil && pod.Annotations[podcontract.AnnotationClaimedBy] == string(call.UID) && pod.DeletionTimestamp.IsZero() {
		w.deleteWarmPod(ctx, pod)
		ctrl.LoggerFrom(ctx).Info("deleted the warm Pod of a cancelled call", "pod", pod.Name)
	}
	return "warm Pod " + name + " deleted", nil
}

func (w *Executor) deleteWarmPod(ctx context.Context, pod *corev1.Pod) {
	uid := pod.UID
	if err := w.Delete(ctx, pod, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		ctrl.LoggerFrom(ctx).Error(err, "could not delete a used warm Pod", "pod", pod.Name)
	}
}

// Tidy deletes the call's claimed Pods whose attempt's outcome is recorded (a restart
// between the outcome's write and release's delete): no Pod serves twice.
func (w *Executor) Tidy(ctx context.Context, _ types.NamespacedName, call *v1alpha1.ToolCall) (time.Duration, error) {
	if call == nil || !ranWarm(call) {
		return 0, nil // a cold call costs this nothing; a gone call's Pods go with it (owner)
	}
	pods := &corev1.PodList{}
	if err := w.List(ctx, pods, client.InNamespace(call.Namespace), client.MatchingFields{executor.IndexCallName: call.Name}); err != nil {
		return 0, err
	}
	running := executor.Current(call)
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Annotations[podcontract.AnnotationClaimedBy] != string(call.UID) || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if !call.Status.Phase.IsTerminal() {
			if call.Status.Phase != v1alpha1.PhaseRunning {
				continue // claimed before a status write a restart lost: claimPod adopts it
			}
			if running.Path == v1alpha1.PathWarm && running.PodName == p.Name {
				continue // the running attempt's
			}
		}
		w.deleteWarmPod(ctx, p)
	}
	return 0, nil
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
