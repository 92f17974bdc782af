package jobexec

import (
	"errors"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/pipeline"
)

// EventExecutionRejected is the Warning event of a call whose Job Kubernetes refused.
const EventExecutionRejected = "ExecutionRejected"

// rejectedMessage is what the model reads: no host configuration (quota names, admission
// policies, images) from the API server's message, which the Executed condition keeps.
const rejectedMessage = "the tool could not be run: the cluster refused to start it"

// rejectedRefusal ends a call whose Job Kubernetes refused: Failed, ExecutionRejected, the
// API server's message in the Executed condition and a Warning event, its reason in _meta.
func rejectedRefusal(call *v1alpha1.ToolCall, jobName string, err error) executor.Refusal {
	apiMessage := "Kubernetes refused to create the Job " + jobName + ": " + err.Error()
	meta := map[string]string{pipeline.MetaAttempt: strconv.Itoa(int(executor.CurrentAttempt(call)))}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Reason != "" {
		meta[pipeline.MetaKubernetesReason] = string(status.Status().Reason)
	}
	return executor.Refusal{Reason: string(pipeline.ReasonExecutionRejected), Message: rejectedMessage, Detail: apiMessage, Meta: meta,
		Event: &executor.Event{Type: corev1.EventTypeWarning, Reason: EventExecutionRejected, Action: "CreateJob", Note: apiMessage}}
}
