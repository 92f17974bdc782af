package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// walk is one call at the stages a watch shows, in order.
func walk() []*v1alpha1.ToolCall {
	pending := newCall("c")
	parked := newCall("c")
	parked.Status.Phase = v1alpha1.PhaseAwaitingApproval
	parked.Status.ApprovalDeadline = atPtr(900)
	parked.Status.Conditions = []metav1.Condition{cond(v1alpha1.ConditionAdmitted, metav1.ConditionUnknown, "AwaitingApproval", "rule deploys: deploying needs a human", 0)}
	queued := newCall("c")
	queued.Status.Phase = v1alpha1.PhaseQueued
	queued.Status.Conditions = []metav1.Condition{cond(v1alpha1.ConditionExecuted, metav1.ConditionUnknown, "Queued", "waiting for earlier calls of session s", 1)}
	running := newCall("c")
	running.Status.Phase = v1alpha1.PhaseRunning
	running.Status.Attempts = []v1alpha1.Attempt{{Attempt: 1, JobName: "c-1"}}
	running.Status.Conditions = []metav1.Condition{cond(v1alpha1.ConditionExecuted, metav1.ConditionUnknown, "Running", "attempt 1 runs in Job c-1", 2)}
	retry := running.DeepCopy()
	retry.Status.Attempts = append(retry.Status.Attempts, v1alpha1.Attempt{Attempt: 2, JobName: "c-2"})
	retry.Status.Conditions = []metav1.Condition{cond(v1alpha1.ConditionExecuted, metav1.ConditionUnknown, "Running", "attempt 2 runs in Job c-2", 3)}
	failed := newCall("c")
	failed.Status.Phase, failed.Status.Duration = v1alpha1.PhaseFailed, "4s"
	failed.Status.Result = &v1alpha1.ToolResult{IsError: true, Reason: "NonZeroExit", Error: "exit status 1\nstderr: boom"}
	return []*v1alpha1.ToolCall{pending, parked, queued, running, retry, failed}
}

func TestStageOf(t *testing.T) {
	want := []stage{
		{Key: "Pending", Name: "Pending", Detail: "waiting for the operator"},
		{Key: "AwaitingApproval", Name: "AwaitingApproval", Detail: "rule deploys: deploying needs a human (denied at 2026-07-01T10:15:00Z unless answered)"},
		{Key: "Queued", Name: "Queued", Detail: "waiting for earlier calls of session s"},
		{Key: "Running/1", Name: "Running", Detail: "attempt 1 runs in Job c-1"},
		{Key: "Running/2", Name: "Running", Detail: "attempt 2 runs in Job c-2"},
		{Key: "Failed", Name: "Failed", Detail: "NonZeroExit: exit status 1 in 4s"},
	}
	var got []stage
	for _, c := range walk() {
		got = append(got, stageOf(c))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stageOf (-want +got):\n%s", diff)
	}
	ok := stageOf(succeededCall("c"))
	if diff := cmp.Diff(stage{Key: "Succeeded", Name: "Succeeded", Detail: "in 2s"}, ok); diff != "" {
		t.Errorf("stageOf(succeeded) (-want +got):\n%s", diff)
	}
}

func TestFormatStage(t *testing.T) {
	cases := []struct {
		s     stage
		since time.Duration
		want  string
	}{
		{stage{Name: "Pending", Detail: "waiting for the operator"}, 0, "  +0.0s  Pending          waiting for the operator"},
		{stage{Name: "Running", Detail: "attempt 1 runs in Job c-1"}, 1234 * time.Millisecond, "  +1.2s  Running          attempt 1 runs in Job c-1"},
		{stage{Name: "Succeeded"}, 65 * time.Second, "  +1m5s  Succeeded"},
	}
	for _, tc := range cases {
		if diff := cmp.Diff(tc.want, formatStage(tc.s, tc.since)); diff != "" {
			t.Errorf("formatStage (-want +got):\n%s", diff)
		}
	}
}

// fakeNow returns a clock advancing one second per reading.
func fakeNow() func() time.Time {
	now := t0
	return func() time.Time {
		now = now.Add(time.Second)
		return now
	}
}

func TestProgressPlain(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, now: fakeNow(), hint: "approve it"}
	p.start = t0
	calls := walk()
	for _, c := range []*v1alpha1.ToolCall{calls[0], calls[0], calls[1], calls[1], calls[2], calls[3], calls[4], calls[5]} {
		p.observe(c)
	}
	p.finish()
	want := []string{
		"  +1.0s  Pending          waiting for the operator",
		"  +3.0s  AwaitingApproval rule deploys: deploying needs a human (denied at 2026-07-01T10:15:00Z unless answered)",
		"approve it",
		"  +5.0s  Queued           waiting for earlier calls of session s",
		"  +6.0s  Running          attempt 1 runs in Job c-1",
		"  +7.0s  Running          attempt 2 runs in Job c-2",
		"  +8.0s  Failed           NonZeroExit: exit status 1 in 4s",
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")); diff != "" {
		t.Errorf("plain progress (-want +got):\n%s", diff)
	}
}

func TestProgressLive(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, live: true, now: fakeNow()}
	p.start = t0
	calls := walk()
	p.observe(calls[0]) // t0+1: Pending begins
	p.mu.Lock()
	p.redraw(p.now()) // t0+2: a tick rewrites the line
	p.mu.Unlock()
	p.observe(calls[3]) // t0+3: Pending's line ends, Running's begins
	p.observe(calls[5]) // t0+4: Running's line ends; a terminal stage is a plain line
	p.finish()
	clear := "\r"
	want := clear + "  +1.0s  Pending          waiting for the operator (0.0s)" +
		clear + "  +1.0s  Pending          waiting for the operator (1.0s)" +
		clear + "  +1.0s  Pending          waiting for the operator (2.0s)\n" +
		clear + "  +3.0s  Running          attempt 1 runs in Job c-1 (0.0s)" +
		clear + "  +3.0s  Running          attempt 1 runs in Job c-1 (1.0s)\n" +
		"  +4.0s  Failed           NonZeroExit: exit status 1 in 4s\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("live progress (-want +got):\n%s", diff)
	}
}
