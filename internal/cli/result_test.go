package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

func content(raw string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(raw)} }

func TestFormatResult(t *testing.T) {
	cases := []struct {
		name   string
		result *v1alpha1.ToolResult
		want   string
	}{
		{name: "no result", want: ""},
		{name: "object content is indented, key order kept", result: &v1alpha1.ToolResult{OK: true, Content: content(`{"z":1,"a":[1,2]}`)},
			want: "{\n  \"z\": 1,\n  \"a\": [\n    1,\n    2\n  ]\n}\n"},
		{name: "string content is printed as text", result: &v1alpha1.ToolResult{OK: true, Content: content(`"line 1\nline 2"`)},
			want: "line 1\nline 2\n"},
		{name: "string content ending in a newline", result: &v1alpha1.ToolResult{OK: true, Content: content(`"done\n"`)}, want: "done\n"},
		{name: "big numbers stay exact", result: &v1alpha1.ToolResult{OK: true, Content: content(`18446744073709551617`)},
			want: "18446744073709551617\n"},
		{name: "null content prints nothing", result: &v1alpha1.ToolResult{OK: true, Content: content(`null`)}, want: ""},
		{name: "error with reason and message", result: &v1alpha1.ToolResult{IsError: true, Reason: "NonZeroExit", Error: "exit status 1: boom"},
			want: "error: NonZeroExit: exit status 1: boom\n"},
		{name: "error with content", result: &v1alpha1.ToolResult{IsError: true, Reason: "ResultBlocked", Error: "blocked", Content: content(`"partial"`)},
			want: "error: ResultBlocked: blocked\npartial\n"},
		{name: "content repeating the message is not printed twice", result: &v1alpha1.ToolResult{IsError: true, Reason: "PolicyDenied", Error: "no deleting", Content: content(`"no deleting"`)},
			want: "error: PolicyDenied: no deleting\n"},
		{name: "error without a message", result: &v1alpha1.ToolResult{IsError: true}, want: "error\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, formatResult(tc.result)); diff != "" {
				t.Errorf("formatResult (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFormatMeta(t *testing.T) {
	cases := []struct {
		meta map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{"truncated": "true", "exitCode": "0"}, "result meta: exitCode=0, truncated=true\n"},
	}
	for _, tc := range cases {
		if diff := cmp.Diff(tc.want, formatMeta(tc.meta)); diff != "" {
			t.Errorf("formatMeta(%v) (-want +got):\n%s", tc.meta, diff)
		}
	}
}

func TestExitCodeForCall(t *testing.T) {
	cases := []struct {
		phase  v1alpha1.ToolCallPhase
		result *v1alpha1.ToolResult
		want   int
	}{
		{v1alpha1.PhaseSucceeded, &v1alpha1.ToolResult{OK: true}, ExitOK},
		{v1alpha1.PhaseFailed, &v1alpha1.ToolResult{IsError: true}, ExitToolError},
		{v1alpha1.PhaseDenied, &v1alpha1.ToolResult{IsError: true}, ExitDenied},
		// A Succeeded call whose result is an error (a blocked result) still exits 1.
		{v1alpha1.PhaseSucceeded, &v1alpha1.ToolResult{IsError: true}, ExitToolError},
	}
	for _, tc := range cases {
		call := newCall("c")
		call.Status.Phase, call.Status.Result = tc.phase, tc.result
		if got := exitCodeForCall(call); got != tc.want {
			t.Errorf("phase %s isError %v: exit %d, want %d", tc.phase, tc.result.IsError, got, tc.want)
		}
	}
}
