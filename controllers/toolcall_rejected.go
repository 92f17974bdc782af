package controllers

import (
	"context"
	"errors"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

// EventExecutionRejected is the Warning event of a call whose Job Kubernetes refused.
const EventExecutionRejected = "ExecutionRejected"

// rejectedMessage is what the model reads: no host configuration (quota names, admission
// policies, images) from the API server's message, which the Executed condition keeps.
const rejectedMessage = "the tool could not be run: the cluster refused to start it"

// rejectExecution ends a call whose Job Kubernetes refused: Failed, ExecutionRejected.
func (r *ToolCallReconciler) rejectExecution(ctx context.Context, call *v1alpha1.ToolCall, jobName string, err error) (ctrl.Result, error) {
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
