package cli

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/display"
)

// stage is where a call is, as the progress display shows it: one line per stage.
type stage struct {
	// Key changes whenever the display should start a new line (a new phase, a new attempt).
	Key string
	// Name is the phase (or "Pending" before the operator has seen the call).
	Name string
	// Detail says what the call is waiting for or how it ended.
	Detail string
}

// stageOf reads a call's stage from its phase and conditions.
func stageOf(call *v1alpha1.ToolCall) stage {
	st := call.Status
	switch st.Phase {
	case "", v1alpha1.PhasePending:
		return stage{Key: "Pending", Name: "Pending", Detail: "waiting for the operator"}
	case v1alpha1.PhaseAwaitingApproval:
		return stage{Key: "AwaitingApproval", Name: "AwaitingApproval", Detail: awaitingDetail(call)}
	case v1alpha1.PhaseQueued:
		return stage{Key: "Queued", Name: "Queued", Detail: conditionMessage(call, v1alpha1.ConditionExecuted, "waiting for earlier calls of its session")}
	case v1alpha1.PhaseRunning:
		n := len(st.Attempts)
		detail := conditionMessage(call, v1alpha1.ConditionExecuted, "running")
		return stage{Key: fmt.Sprintf("Running/%d", n), Name: "Running", Detail: detail}
	}
	return stage{Key: string(st.Phase), Name: string(st.Phase), Detail: terminalDetail(call)}
}

// awaitingDetail says why the call waits and until when.
func awaitingDetail(call *v1alpha1.ToolCall) string {
	msg := conditionMessage(call, v1alpha1.ConditionAdmitted, "a policy asks for approval")
	if d := call.Status.ApprovalDeadline; d != nil {
		msg += " (denied at " + d.UTC().Format(time.RFC3339) + " unless answered)"
	}
	return msg
}

// terminalDetail is the reason and message of a finished call, and how long it took.
func terminalDetail(call *v1alpha1.ToolCall) string {
	var parts []string
	if r := call.Status.Result; r != nil && r.IsError {
		parts = append(parts, strings.TrimSpace(r.Reason+": "+firstLine(r.Error)))
	}
	if call.Status.Duration != "" {
		parts = append(parts, "in "+call.Status.Duration)
	}
	return strings.Join(parts, " ")
}

// conditionMessage is the message of the condition of type t, else fallback.
func conditionMessage(call *v1alpha1.ToolCall, t, fallback string) string {
	if c := meta.FindStatusCondition(call.Status.Conditions, t); c != nil && c.Message != "" {
		return c.Message
	}
	return fallback
}

// formatStage renders a stage line: the time since the wait began, the stage, its detail
// (conditions' messages carry what policies and tool bodies wrote: shown as one line).
func formatStage(s stage, since time.Duration) string {
	return strings.TrimRight(fmt.Sprintf("%7s  %-16s %s", "+"+formatSeconds(since), display.Line(s.Name), display.Line(s.Detail)), " ")
}

// formatSeconds renders a short duration with one decimal below a minute ("0.4s", "12.0s"),
// else as Go does, to the second ("1m5s").
func formatSeconds(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
