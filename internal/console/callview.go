package console

import (
	"time"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// CallView is a call and what belongs to it, as the CLI's describe reads it: the rows of
// its tables as the CLI lays them out.
type CallView struct {
	Call     *v1alpha1.ToolCall
	Approval *v1alpha1.ToolCallApproval
	// JobState is the current Job's state ("" without a Job).
	JobState string
	// Timeline rows: AT, DELTA, CONDITION, STATUS, REASON, MESSAGE, the first the creation.
	Timeline [][]string
	// Attempts rows: ATTEMPT, JOB, STARTED, TOOK, REASON.
	Attempts [][]string
	// Pods rows: NAME, ATTEMPT, PHASE, TOOL CONTAINER.
	Pods [][]string
	// Events rows: TYPE, REASON, AGE, MESSAGE.
	Events [][]string
	// Notes say what could not be read.
	Notes []string
}

// callView is the call page's model.
type callView struct {
	Card                       card
	Verdict, Duration, Created string
	Terminal                   bool
	Timeline                   []stageRow
	Result                     *resultCard
	Approval                   *approvalView
	JobName, JobState          string
	Attempts, Pods, Events     [][]string
	Notes                      []string
}

// stageRow is a row of the timeline: DELTA is the time the stage took since the row
// before.
type stageRow struct {
	At, Delta, Condition, Status, Reason, Message string
}

type approvalView struct {
	Decision, Approver, Reason, Consumed string
	// Other: the approval answers an earlier call of the same name, not this one.
	Other bool
}

func newCallView(v *CallView, identity string, now time.Time) *callView {
	call := v.Call
	cv := &callView{
		Card: newCard(call, identity, now), Verdict: string(call.Status.Verdict), Duration: call.Status.Duration,
		Created: call.CreationTimestamp.UTC().Format(time.RFC3339), Terminal: terminal(call),
		Result: newResultCard(call), JobState: v.JobState,
		Attempts: v.Attempts, Pods: v.Pods, Events: v.Events, Notes: v.Notes,
	}
	if call.Status.Job != nil {
		cv.JobName = call.Status.Job.Name
	}
	for _, r := range v.Timeline {
		if len(r) == 6 {
			cv.Timeline = append(cv.Timeline, stageRow{At: r[0], Delta: r[1], Condition: r[2], Status: r[3], Reason: r[4], Message: r[5]})
		}
	}
	if a := v.Approval; a != nil {
		av := &approvalView{Decision: string(a.Spec.Decision), Approver: a.Spec.Approver, Reason: a.Spec.Reason,
			Other: a.Spec.CallUID != string(call.UID), Consumed: "not yet"}
		for _, c := range a.Status.Conditions {
			if c.Type == v1alpha1.ConditionConsumed {
				av.Consumed = string(c.Status) + " (" + c.Reason + ")"
				if c.Message != "" {
					av.Consumed += ": " + c.Message
				}
			}
		}
		cv.Approval = av
	}
	return cv
}

func terminal(call *v1alpha1.ToolCall) bool {
	switch call.Status.Phase {
	case v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed, v1alpha1.PhaseDenied:
		return true
	}
	return false
}
