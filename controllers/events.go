package controllers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
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

type event struct {
	eventType, reason, action, note string
}

func callAdmitted(call *v1alpha1.ToolCall) event {
	return event{corev1.EventTypeNormal, EventCallAdmitted, "Admit",
		fmt.Sprintf("call of %s by %s admitted with arguments %s", call.Spec.Tool, call.Spec.Requester, call.Status.ArgumentsDigest)}
}

func approvalRequested(call *v1alpha1.ToolCall, d pipeline.Decision) event {
	return event{corev1.EventTypeNormal, EventApprovalRequested, "Park",
		fmt.Sprintf("call of %s by %s awaits approval of arguments %s: %s", call.Spec.Tool, call.Spec.Requester, call.Status.ArgumentsDigest, d.Message)}
}

// terminalEvents are the events of a call that just reached a terminal phase.
func terminalEvents(call *v1alpha1.ToolCall) []event {
	res := call.Status.Result
	if call.Status.Phase == v1alpha1.PhaseDenied {
		return []event{{corev1.EventTypeWarning, EventDenied, "Deny",
			fmt.Sprintf("call of %s by %s denied (%s)", call.Spec.Tool, call.Spec.Requester, res.Reason)}}
	}
	eventType := corev1.EventTypeNormal
	if res.IsError {
		eventType = corev1.EventTypeWarning
	}
	return []event{{eventType, EventResultFrozen, "Complete",
		fmt.Sprintf("call of %s ended %s (%s); result %s", call.Spec.Tool, call.Status.Phase, res.Reason, call.Status.ResultDigest)}}
}

// afterStatusWrite emits events only once the status that records them is written.
func (r *ToolCallReconciler) afterStatusWrite(call *v1alpha1.ToolCall, events []event) {
	for _, e := range events {
		emit(r.Recorder, call, e.eventType, e.reason, e.action, e.note)
	}
}
