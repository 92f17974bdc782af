package executor

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
)

// WakeSource is implemented by an executor whose attempts end outside any watch (the warm
// executor's attach streams): each event wakes the call's reconcile.
type WakeSource interface {
	Wakeups() chan ctrlevent.GenericEvent
}

// StoppingPods is implemented by an executor whose attempts run in a Pod that carries no
// mark of any one attempt (a session Pod serves one call after another): it names the Pods
// of call's attempt a that are being deleted, so that an end the runner did not vouch for
// (a cancel, a deadline, a broken connection) is recorded only once they have stopped, as
// for an attempt's own Pods (the ToolCall reconciler's toolcall_stopping.go).
type StoppingPods interface {
	StoppingPods(ctx context.Context, call *v1alpha1.ToolCall, a *v1alpha1.Attempt) ([]*corev1.Pod, error)
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
	return AttemptStart(call, now).Add(timeout(call) + grace)
}

// AdmittedDeadline is AttemptDeadline for an attempt whose Job waited, suspended, for
// admission: the tool's timeout counts from admission (admitted, the Job's status.startTime,
// which the Job controller resets when it resumes a Job, as it does activeDeadlineSeconds),
// never from the attempt's start; admitted zero (not known yet) counts from the latest
// admission could have come, the attempt's start plus maxWait.
func AdmittedDeadline(call *v1alpha1.ToolCall, admitted time.Time, maxWait time.Duration, now time.Time, grace time.Duration) time.Time {
	start := AttemptStart(call, now)
	switch {
	case admitted.IsZero():
		start = start.Add(maxWait)
	case admitted.After(start):
		start = admitted
	}
	return start.Add(timeout(call) + grace)
}

// AttemptStart is when the current attempt started (now when none is recorded).
func AttemptStart(call *v1alpha1.ToolCall, now time.Time) time.Time {
	if a := Current(call); a != nil && a.StartTime != nil {
		return a.StartTime.Time
	}
	return now
}

func timeout(call *v1alpha1.ToolCall) time.Duration {
	return time.Duration(podspec.TimeoutSeconds(call.Status.Tool.Spec)) * time.Second
}
