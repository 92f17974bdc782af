package cli

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// t0 is when the calls of the tests were created.
var t0 = time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)

func at(seconds int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(seconds) * time.Second)) }

func atPtr(seconds int) *metav1.Time {
	t := at(seconds)
	return &t
}

func cond(t string, status metav1.ConditionStatus, reason, msg string, seconds int) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: at(seconds)}
}

// newCall is a call of echo by alice in ns "agents", created at t0, with no status.
func newCall(name string) *v1alpha1.ToolCall {
	return &v1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "agents", CreationTimestamp: at(0)},
		Spec: v1alpha1.ToolCallSpec{Tool: "echo", Requester: "alice",
			Arguments: runtime.RawExtension{Raw: []byte(`{"text":"hi"}`)}},
	}
}

// succeededCall is newCall walked to Succeeded in 2s with content {"text":"hi"}.
func succeededCall(name string) *v1alpha1.ToolCall {
	c := newCall(name)
	c.Status = v1alpha1.ToolCallStatus{
		Phase: v1alpha1.PhaseSucceeded, Verdict: v1alpha1.VerdictAllow, Duration: "2s",
		ArgumentsDigest: "sha256:" + hex64('a'), ResultDigest: "sha256:" + hex64('b'),
		Tool: &v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "echo", SpecDigest: "sha256:" + hex64('c'), Generation: 3,
			Spec: &v1alpha1.ToolSpec{Body: v1alpha1.ToolBody{Image: "example/echo:1"}, ReadOnly: true}},
		Job:      &v1alpha1.JobReference{Name: name + "-1"},
		Attempts: []v1alpha1.Attempt{{Attempt: 1, JobName: name + "-1", StartTime: atPtr(0), CompletionTime: atPtr(2)}},
		Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionResolved, metav1.ConditionTrue, "Resolved", "Tool echo", 0),
			cond(v1alpha1.ConditionArgumentsFrozen, metav1.ConditionTrue, "Frozen", "", 0),
			cond(v1alpha1.ConditionArgumentsValid, metav1.ConditionTrue, "Valid", "", 0),
			cond(v1alpha1.ConditionAdmitted, metav1.ConditionTrue, "PolicyAllowed", "", 0),
			cond(v1alpha1.ConditionGuarded, metav1.ConditionTrue, "PolicyAllowed", "", 0),
			cond(v1alpha1.ConditionExecuted, metav1.ConditionTrue, "Succeeded", "the tool body ran to completion", 2),
			cond(v1alpha1.ConditionResultAccepted, metav1.ConditionTrue, "ResultAccepted", "", 2),
			cond(v1alpha1.ConditionNormalized, metav1.ConditionTrue, "Succeeded", "", 2),
			cond(v1alpha1.ConditionCompleted, metav1.ConditionTrue, "Succeeded", "", 2),
		},
		Result: &v1alpha1.ToolResult{OK: true, Content: &apiextensionsv1.JSON{Raw: []byte(`{"text":"hi"}`)}},
	}
	return c
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}
