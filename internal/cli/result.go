package cli

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/display"
)

// formatResult is what `call` prints for a result: the content — a JSON string as its
// text, any other JSON indented — and for an isError result first a line
// "error: <reason>: <message>" (then the content unless it only repeats the message).
// A nil result prints nothing. The tool wrote all of it: it is shown as text
// (display.Text), never raw; -o json prints the exact value.
func formatResult(r *v1alpha1.ToolResult) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	if r.IsError {
		b.WriteString(errorLine(r))
	}
	repeatsError := r.IsError && r.Content != nil && sameText(r.Content.Raw, r.Error)
	if r.Content != nil && len(r.Content.Raw) > 0 && !repeatsError {
		b.WriteString(contentText(r.Content.Raw))
	}
	return b.String()
}

// sameText reports whether content is the JSON string s (an error result's content often
// repeats its message for the model).
func sameText(content []byte, s string) bool {
	var text string
	return json.Unmarshal(content, &text) == nil && text == s
}

// errorLine is "error: <reason>: <message>\n", leaving out what is empty.
func errorLine(r *v1alpha1.ToolResult) string {
	parts := []string{"error"}
	if r.Reason != "" {
		parts = append(parts, display.Line(r.Reason))
	}
	if r.Error != "" {
		parts = append(parts, display.Text(r.Error))
	}
	return strings.Join(parts, ": ") + "\n"
}

// contentText renders content: a JSON string unquoted, null as nothing, anything else
// indented; always newline-terminated when not empty.
func contentText(raw []byte) string {
	var s string
	switch {
	case string(raw) == "null":
		return ""
	case json.Unmarshal(raw, &s) == nil:
		s = display.Text(s)
		if s == "" || strings.HasSuffix(s, "\n") {
			return s
		}
		return s + "\n"
	}
	return showJSON(raw) + "\n"
}

// formatMeta lists a result's meta (truncation, exit code …) as one line, keys sorted,
// for stderr; empty when there is none.
func formatMeta(meta map[string]string) string {
	if len(meta) == 0 {
		return ""
	}
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, 0, len(keys))
	for _, k := range keys {
		pairs = append(pairs, display.Line(k+"="+meta[k]))
	}
	return "result meta: " + strings.Join(pairs, ", ") + "\n"
}

// exitCodeForCall is the exit code of `call --wait` for a finished call.
func exitCodeForCall(call *v1alpha1.ToolCall) int {
	switch {
	case call.Status.Phase == v1alpha1.PhaseDenied:
		return ExitDenied
	case call.Status.Phase == v1alpha1.PhaseFailed, call.Status.Result != nil && call.Status.Result.IsError:
		return ExitToolError
	}
	return ExitOK
}
