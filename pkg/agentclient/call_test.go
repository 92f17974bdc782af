package agentclient

import (
	"strings"
	"testing"

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
