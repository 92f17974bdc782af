package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

func describedCall() describeView {
	call := succeededCall("echo-x")
	call.Status.ApprovalDeadline = atPtr(900)
	approval := &v1alpha1.ToolCallApproval{
		Spec: v1alpha1.ToolCallApprovalSpec{Decision: v1alpha1.DecisionApprove, Approver: "bob", Reason: "fine"},
		Status: v1alpha1.ToolCallApprovalStatus{Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionConsumed, metav1.ConditionTrue, v1alpha1.ReasonApplied, "", 1)}},
	}
	job := &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "echo-x-1-abcde", Labels: map[string]string{v1alpha1.LabelAttempt: "1"}},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
			Name: v1alpha1.ToolContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}},
	}
	events := []corev1.Event{
		{Type: "Normal", Reason: "ResultFrozen", Message: "call of echo ended Succeeded", EventTime: metav1.NewMicroTime(t0.Add(2 * time.Second))},
		{Type: "Normal", Reason: "CallAdmitted", Message: "call of echo by alice admitted", EventTime: metav1.NewMicroTime(t0)},
	}
	return describeView{Call: call, Approval: approval, Job: job, Pods: []corev1.Pod{pod}, Events: events,
		Notes: []string{`you may not list events in namespace "agents"`}}
}

func TestFormatDescribe(t *testing.T) {
	digest := func(c byte) string { return "sha256:" + hex64(c) }
	full := `Name:      echo-x
Namespace: agents
Tool:      echo
Scope:     <namespace>
Session:   <none>
Requester: alice
Created:   2026-07-01T10:00:00Z (2m ago)
Phase:     Succeeded
Verdict:   Allow
Duration:  2s
Tool:
  Kind:             Tool
  Object:           echo
  Registered in:    <namespace>
  Spec digest:      ` + digest('c') + `
  Generation:       3
  Image:            example/echo:1
  Timeout:          <default>
  Concurrency safe: false
  Read only:        true
Arguments (` + digest('a') + `):
  {
    "text": "hi"
  }
Timeline:
  AT    DELTA   CONDITION         STATUS   REASON           MESSAGE
  +0s           Created
  +0s   +0s     Resolved          True     Resolved         Tool echo
  +0s   +0s     ArgumentsFrozen   True     Frozen
  +0s   +0s     ArgumentsValid    True     Valid
  +0s   +0s     Admitted          True     PolicyAllowed
  +0s   +0s     Guarded           True     PolicyAllowed
  +2s   +2s     Executed          True     Succeeded        the tool body ran to completion
  +2s   +0s     ResultAccepted    True     ResultAccepted
  +2s   +0s     Normalized        True     Succeeded
  +2s   +0s     Completed         True     Succeeded
Approval:
  Deadline: 2026-07-01T10:15:00Z
  Decision: Approve by bob
  Reason:   fine
  Consumed: True (Applied)
Result (` + digest('b') + `):
  OK:       true
  Is error: false
  Content:
    {
      "text": "hi"
    }
Attempts:
  ATTEMPT   PATH   JOB        STARTED                TOOK   REASON
  1         cold   echo-x-1   2026-07-01T10:00:00Z   2s
Job:
  Name:  echo-x-1
  State: Complete
Pods:
  NAME             ATTEMPT   PHASE       TOOL CONTAINER
  echo-x-1-abcde   1         Succeeded   Terminated: Completed (exit 0)
Events:
  TYPE     REASON         AGE    MESSAGE
  Normal   CallAdmitted   2m     call of echo by alice admitted
  Normal   ResultFrozen   118s   call of echo ended Succeeded
Notes:
  you may not list events in namespace "agents"
`
	pending := newCall("echo-y")
	replayed := describedCall()
	replayed.Call.UID, replayed.Approval.Spec.CallUID = "new-uid", "old-uid"
	cases := []struct {
		name string
		view describeView
		want string
	}{
		{name: "a finished, approved call", view: describedCall(), want: full},
		{name: "an approval left by an earlier call of the same name", view: replayed, want: strings.Replace(full,
			"  Decision: Approve by bob\n", "  Decision: Approve by bob\n  Answers:  another call (uid old-uid), not this one (uid new-uid): it does not count\n", 1)},
		{name: "a call the operator has not seen", view: describeView{Call: pending}, want: `Name:      echo-y
Namespace: agents
Tool:      echo
Scope:     <namespace>
Session:   <none>
Requester: alice
Created:   2026-07-01T10:00:00Z (2m ago)
Phase:     Pending
Verdict:   <none>
Duration:  <none>
Tool:
  <not resolved yet>
Arguments:
  {
    "text": "hi"
  }
Timeline:
  AT    DELTA   CONDITION   STATUS   REASON   MESSAGE
  +0s           Created
Result:
  <none yet>
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := formatDescribe(tc.view, t0.Add(2*time.Minute))
			if diff := cmp.Diff(lines(tc.want), lines(got)); diff != "" {
				t.Errorf("formatDescribe (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFormatApprovalRequest(t *testing.T) {
	call := newCall("deploy-x")
	call.Spec.Session = "s1"
	call.Spec.Arguments.Raw = []byte(`{"env":"prod","replicas":3}`)
	call.Status.Phase = v1alpha1.PhaseAwaitingApproval
	call.Status.ArgumentsDigest = "sha256:" + hex64('d')
	call.Status.ApprovalDeadline = atPtr(900)
	call.Status.Tool = &v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindClusterTool, Name: "deploy-v2"}
	call.Status.Conditions = []metav1.Condition{cond(v1alpha1.ConditionAdmitted, metav1.ConditionUnknown, "AwaitingApproval", "rule prod: production needs a human", 0)}
	want := `Arguments (canonical JSON, sha256:` + hex64('d') + `):
  {"env":"prod","replicas":3}
Call:          deploy-x in namespace agents
Tool:          echo (ClusterTool deploy-v2, <cluster>)
Requester:     alice
Session:       s1
Asked because: rule prod: production needs a human
Deadline:      2026-07-01T10:15:00Z (in 10m0s)
`
	if diff := cmp.Diff(want, formatApprovalRequest(call, t0.Add(5*time.Minute))); diff != "" {
		t.Errorf("formatApprovalRequest (-want +got):\n%s", diff)
	}
}

func TestContainerState(t *testing.T) {
	cases := []struct {
		state corev1.ContainerState
		want  string
	}{
		{corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}, "Waiting: ErrImageNeverPull"},
		{corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, "Running"},
		{corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}, "Terminated: OOMKilled (exit 137)"},
	}
	for _, tc := range cases {
		pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "init"}, {Name: v1alpha1.ToolContainerName, State: tc.state}}}}
		if got := containerState(pod); got != tc.want {
			t.Errorf("containerState = %q, want %q", got, tc.want)
		}
	}
	if got := containerState(&corev1.Pod{}); got != "<no status>" {
		t.Errorf("containerState(no status) = %q", got)
	}
}
