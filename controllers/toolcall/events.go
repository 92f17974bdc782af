package toolcall

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/pipeline"
)

// Event reasons of the audit chain: a call is requested (admitted or parked) before anything
// runs, and its result is recorded after it is frozen.
const (
	EventCallAdmitted      = "CallAdmitted"
	EventApprovalRequested = "ApprovalRequested"
	EventDenied            = "Denied"
	EventResultFrozen      = "ResultFrozen"
)

// event is an Event recorded on a call after a status write (executor.Event: the refusals of
// executors carry theirs too).
type event = executor.Event

func callAdmitted(call *v1alpha1.ToolCall) event {
	return event{Type: corev1.EventTypeNormal, Reason: EventCallAdmitted, Action: "Admit",
		Note: fmt.Sprintf("call of %s by %s admitted with arguments %s", call.Spec.Tool, call.Spec.Requester, call.Status.ArgumentsDigest)}
}

func approvalRequested(call *v1alpha1.ToolCall, d pipeline.Decision) event {
	return event{Type: corev1.EventTypeNormal, Reason: EventApprovalRequested, Action: "Park",
		Note: fmt.Sprintf("call of %s by %s awaits approval of arguments %s: %s", call.Spec.Tool, call.Spec.Requester, call.Status.ArgumentsDigest, d.Message)}
}

// terminalEvents are the events of a call that just reached a terminal phase.
func terminalEvents(call *v1alpha1.ToolCall) []event {
	res := call.Status.Result
	if call.Status.Phase == v1alpha1.PhaseDenied {
		return []event{{Type: corev1.EventTypeWarning, Reason: EventDenied, Action: "Deny",
			Note: fmt.Sprintf("call of %s by %s denied (%s)", call.Spec.Tool, call.Spec.Requester, res.Reason)}}
	}
	eventType := corev1.EventTypeNormal
	if res.IsError {
		eventType = corev1.EventTypeWarning
	}
	return []event{{Type: eventType, Reason: EventResultFrozen, Action: "Complete",
		Note: fmt.Sprintf("call of %s ended %s (%s); result %s", call.Spec.Tool, call.Status.Phase, res.Reason, call.Status.ResultDigest)}}
}
