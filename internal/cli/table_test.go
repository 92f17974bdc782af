package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/catalog"
)

func TestCallTable(t *testing.T) {
	pending := newCall("echo-pending")
	denied := newCall("rm-denied")
	denied.Spec.Tool, denied.Spec.Session = "rm", "s1"
	denied.Status.Phase, denied.Status.Verdict, denied.Status.Duration = v1alpha1.PhaseDenied, v1alpha1.VerdictDeny, "0s"
	calls := []v1alpha1.ToolCall{*succeededCall("echo-ok"), *pending, *denied}
	now := t0.Add(90 * time.Second)
	cases := []struct {
		name  string
		calls []v1alpha1.ToolCall
		wide  bool
		want  []string
	}{
		{name: "empty", want: []string{"NAME   TOOL   PHASE   VERDICT   DURATION   AGE"}},
		{name: "calls", calls: calls, want: []string{
			"NAME           TOOL   PHASE       VERDICT   DURATION   AGE",
			"echo-ok        echo   Succeeded   Allow     2s         90s",
			"echo-pending   echo   Pending                          90s",
			"rm-denied      rm     Denied      Deny      0s         90s",
		}},
		{name: "wide", calls: calls[2:], wide: true, want: []string{
			"NAME        TOOL   PHASE    VERDICT   DURATION   AGE   REQUESTER   SESSION",
			"rm-denied   rm     Denied   Deny      0s         90s   alice       s1",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, lines(callTable(tc.calls, now, tc.wide))); diff != "" {
				t.Errorf("callTable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolTable(t *testing.T) {
	long := strings.Repeat("x", 70)
	tools := []catalog.VisibleTool{
		{Name: "echo", Kind: v1alpha1.ToolKindTool, Spec: &v1alpha1.ToolSpec{Description: "Returns its arguments.\nMore text.", ReadOnly: true}},
		{Name: "grep", Kind: v1alpha1.ToolKindTool, Scope: "team", Spec: &v1alpha1.ToolSpec{ConcurrencySafe: true, Description: long}},
		{Name: "now", Kind: v1alpha1.ToolKindClusterTool, Spec: &v1alpha1.ToolSpec{ReadOnly: true}},
	}
	want := []string{
		"NAME   KIND          SCOPE         CONCURRENCY-SAFE   READ-ONLY   DESCRIPTION",
		"echo   Tool          <namespace>   false              true        Returns its arguments.",
		"grep   Tool          team          true               false       " + strings.Repeat("x", 59) + "…",
		"now    ClusterTool   <cluster>     false              true",
	}
	if diff := cmp.Diff(want, lines(toolTable(tools))); diff != "" {
		t.Errorf("toolTable (-want +got):\n%s", diff)
	}
}

func TestAge(t *testing.T) {
	cases := []struct {
		created time.Time
		want    string
	}{
		{time.Time{}, "<unknown>"},
		{t0.Add(-5 * time.Second), "5s"},
		{t0.Add(-3 * time.Minute), "3m"},
		{t0.Add(-50 * time.Hour), "2d2h"},
	}
	for _, tc := range cases {
		if got := age(tc.created, t0); got != tc.want {
			t.Errorf("age(%v) = %q, want %q", tc.created, got, tc.want)
		}
	}
}

// lines splits output into lines without trailing blanks (tabwriter pads the last column).
func lines(s string) []string {
	out := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range out {
		out[i] = strings.TrimRight(l, " ")
	}
	return out
}
