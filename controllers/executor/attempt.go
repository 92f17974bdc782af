package executor

import (
	"time"

	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
)

// WakeSource is implemented by an executor whose attempts end outside any watch (the warm
// executor's attach streams): each event wakes the call's reconcile.
type WakeSource interface {
	Wakeups() chan ctrlevent.GenericEvent
}

// Current is the call's current attempt; nil before the first.
func Current(call *v1alpha1.ToolCall) *v1alpha1.Attempt {
	if n := len(call.Status.Attempts); n > 0 {
		return &call.Status.Attempts[n-1]
	}
	return nil
}

// CurrentAttempt is the number of the call's current attempt (1 before the first).
func CurrentAttempt(call *v1alpha1.ToolCall) int32 {
	if a := Current(call); a != nil {
		return a.Attempt
	}
	return 1
}

// AttemptDeadline is when the operator ends an attempt nobody reported on: the current
// attempt's start (now when none is recorded) plus the tool's timeout plus grace (for Pod
// start-up and status propagation).
func AttemptDeadline(call *v1alpha1.ToolCall, now time.Time, grace time.Duration) time.Time {
	start := now
	if a := Current(call); a != nil && a.StartTime != nil {
		start = a.StartTime.Time
	}
	timeout := time.Duration(podspec.TimeoutSeconds(call.Status.Tool.Spec)) * time.Second
	return start.Add(timeout + grace)
}
