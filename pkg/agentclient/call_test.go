package agentclient

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

func TestGenerateName(t *testing.T) {
	for tool, want := range map[string]string{
		"echo":                   "echo-",
		"read_file":              "read-file-",
		"Git_Diff--v2":           "git-diff-v2-",
		"_x_":                    "x-",
		"___":                    "call-",
		strings.Repeat("a", 64):  strings.Repeat("a", 40) + "-",
		strings.Repeat("a-", 32): strings.TrimRight(strings.Repeat("a-", 20), "-") + "-",
	} {
		got := generateName(tool)
		if got != want {
			t.Errorf("generateName(%q) = %q, want %q", tool, got, want)
		}
		// The API server appends 5 characters; the result must be a DNS-1123 subdomain.
		if errs := validation.IsDNS1123Subdomain(got + "abcde"); len(errs) != 0 {
			t.Errorf("generateName(%q) = %q: %v", tool, got, errs)
		}
	}
}

func TestDoneAndAwaitingApproval(t *testing.T) {
	result := &v1alpha1.ToolResult{OK: true}
	for _, tc := range []struct {
		phase    v1alpha1.ToolCallPhase
		result   *v1alpha1.ToolResult
		done     bool
		awaiting bool
	}{
		{phase: "", done: false},
		{phase: v1alpha1.PhasePending},
		{phase: v1alpha1.PhaseAwaitingApproval, awaiting: true},
		{phase: v1alpha1.PhaseRunning},
		{phase: v1alpha1.PhaseSucceeded, result: result, done: true},
		{phase: v1alpha1.PhaseFailed, result: result, done: true},
		{phase: v1alpha1.PhaseDenied, result: result, done: true},
		// A terminal phase without its result is not done: the result is written with it.
		{phase: v1alpha1.PhaseSucceeded},
	} {
		call := &v1alpha1.ToolCall{Status: v1alpha1.ToolCallStatus{Phase: tc.phase, Result: tc.result}}
		if got := Done(call); got != tc.done {
			t.Errorf("Done(%s, result %v) = %v", tc.phase, tc.result != nil, got)
		}
		if got := AwaitingApproval(call); got != tc.awaiting {
			t.Errorf("AwaitingApproval(%s) = %v", tc.phase, got)
		}
	}
}

func TestNewApproval(t *testing.T) {
	call := &v1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "deploy-x7k2p", UID: "6c1d4d0e-0000-4000-8000-000000000001"},
		Status:     v1alpha1.ToolCallStatus{ArgumentsDigest: "sha256:" + strings.Repeat("a", 64)},
	}
	got, err := NewApproval(call, v1alpha1.DecisionApprove, "bob", "ticket 4711")
	if err != nil {
		t.Fatal(err)
	}
	no := false
	want := &v1alpha1.ToolCallApproval{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "deploy-x7k2p", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "toolgate.dev/v1alpha1", Kind: "ToolCall", Name: "deploy-x7k2p",
			UID: "6c1d4d0e-0000-4000-8000-000000000001", Controller: &no, BlockOwnerDeletion: &no,
		}}},
		Spec: v1alpha1.ToolCallApprovalSpec{CallUID: "6c1d4d0e-0000-4000-8000-000000000001",
			Decision: v1alpha1.DecisionApprove, ArgumentsDigest: call.Status.ArgumentsDigest, Approver: "bob", Reason: "ticket 4711"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewApproval (-want +got):\n%s", diff)
	}

	for name, tc := range map[string]struct {
		mutate func(*v1alpha1.ToolCall)
		err    string
	}{
		"no uid":    {func(c *v1alpha1.ToolCall) { c.UID = "" }, "call deploy-x7k2p has no uid: answer a call as read from the API server"},
		"no digest": {func(c *v1alpha1.ToolCall) { c.Status.ArgumentsDigest = "" }, "call deploy-x7k2p has no arguments digest yet: it has not been admitted"},
	} {
		c := call.DeepCopy()
		tc.mutate(c)
		if _, err := NewApproval(c, v1alpha1.DecisionDeny, "bob", ""); err == nil || err.Error() != tc.err {
			t.Errorf("%s: err = %v, want %q", name, err, tc.err)
		}
	}
}
