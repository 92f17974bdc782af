package controllers

import (
	"context"
	"errors"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

// maxCreateRefusals is how many times an attempt's Job create may be refused before the
// call ends ExecutionRejected. The retries go through the controller's rate limiter
// (exponential from 5 ms), so ten refusals span about five seconds; the attempt's deadline
// (timeout + grace) ends it sooner when it comes first.
const maxCreateRefusals = 10

// EventExecutionRejected is the Warning event of a call whose Job Kubernetes refused.
const EventExecutionRejected = "ExecutionRejected"

// rejectedMessage is what the model reads: no host configuration (quota names, admission
// policies, images) from the API server's message, which the Executed condition keeps.
const rejectedMessage = "the tool could not be run: the cluster refused to start it"

// refusals counts the refused Job creates of each call's current attempt, in memory: a
// restart starts counting again, and the attempt's deadline still bounds the whole.
type refusals struct {
	mu    sync.Mutex
	calls map[types.NamespacedName]refusalCount
}

type refusalCount struct {
	uid     types.UID
	attempt int32
	n       int
	last    error
}

// add counts one refusal of the call's attempt and returns how many there were.
func (f *refusals) add(call *v1alpha1.ToolCall, attempt int32, err error) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[types.NamespacedName]refusalCount{}
	}
	key := types.NamespacedName{Namespace: call.Namespace, Name: call.Name}
	c := f.calls[key]
	if c.uid != call.UID || c.attempt != attempt {
		c = refusalCount{uid: call.UID, attempt: attempt}
	}
	c.n++
	c.last = err
	f.calls[key] = c
	return c.n
}

// last is the latest refusal of the call's attempt, nil when there was none.
func (f *refusals) last(call *v1alpha1.ToolCall, attempt int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.calls[types.NamespacedName{Namespace: call.Namespace, Name: call.Name}]
	if !ok || c.uid != call.UID || c.attempt != attempt {
		return nil
	}
	return c.last
}

// forget drops the count of a call whose Job exists, that ended or that is gone.
func (f *refusals) forget(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.calls, key)
}

// persistentCreateError reports a create the API server will refuse whatever the retry:
// the object itself is wrong.
func persistentCreateError(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsRequestEntityTooLargeError(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err)
}

// createRefused decides what a refused Job create means. An object the API server will
// never accept ends the call at once; any other refusal (a quota, an admission policy or
// webhook, a timeout, an unavailable API server) is retried through the rate limiter until
// maxCreateRefusals or the attempt's deadline, and then ends the call. Either way the call
// ends Failed ExecutionRejected with the API server's message: it never stays Running.
func (r *ToolCallReconciler) createRefused(ctx context.Context, call *v1alpha1.ToolCall, jobName string, err error) (ctrl.Result, error) {
	n := r.refusals.add(call, currentAttempt(call), err)
	if !persistentCreateError(err) && n < maxCreateRefusals && r.Clock.Now().Before(r.attemptDeadline(call)) {
		ctrl.LoggerFrom(ctx).Info("Job create refused; retrying", "job", jobName, "refusals", n, "error", err.Error())
		return ctrl.Result{}, err
	}
	return r.rejectExecution(ctx, call, jobName, err)
}

// createTooLate ends an attempt whose deadline passed before its Job was created: with
// the API server's last refusal when it refused (ExecutionRejected), else as a body that
// never started (the operator was down between recording the attempt and creating its
// Job). Either way the Job is not created: a body never starts after its deadline.
func (r *ToolCallReconciler) createTooLate(ctx context.Context, call *v1alpha1.ToolCall, attempt int32) (ctrl.Result, error) {
	if err := r.refusals.last(call, attempt); err != nil {
		return r.rejectExecution(ctx, call, JobName(call.Name, attempt), err)
	}
	return r.finishAttempt(ctx, call, nil, pipeline.Outcome{TerminationReason: pipeline.TerminationDeadlineExceeded, Attempt: int(attempt)})
}

// rejectExecution ends a call whose Job Kubernetes refused: Failed, ExecutionRejected.
func (r *ToolCallReconciler) rejectExecution(ctx context.Context, call *v1alpha1.ToolCall, jobName string, err error) (ctrl.Result, error) {
	r.refusals.forget(types.NamespacedName{Namespace: call.Namespace, Name: call.Name})
	now := r.Clock.Now()
	reason := string(pipeline.ReasonExecutionRejected)
	if n := len(call.Status.Attempts) - 1; n >= 0 {
		call.Status.Attempts[n].CompletionTime = ptrTime(now)
		call.Status.Attempts[n].Reason = reason
	}
	apiMessage := "Kubernetes refused to create the Job " + jobName + ": " + err.Error()
	r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionFalse, reason, apiMessage)
	meta := map[string]string{pipeline.MetaAttempt: strconv.Itoa(int(currentAttempt(call)))}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Reason != "" {
		meta[pipeline.MetaKubernetesReason] = string(status.Status().Reason)
	}
	ctrl.LoggerFrom(ctx).Info("ending call: its Job was refused", "job", jobName, "error", err.Error())
	r.setTerminal(call, v1alpha1.PhaseFailed, pipeline.Result{IsError: true, Reason: pipeline.ReasonExecutionRejected,
		Error: rejectedMessage, Content: rejectedMessage, Meta: meta}, now)
	if err := r.writeTerminal(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	emit(r.Recorder, call, corev1.EventTypeWarning, EventExecutionRejected, "CreateJob", apiMessage)
	return ctrl.Result{}, nil
}
