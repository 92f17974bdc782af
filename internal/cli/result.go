package cli

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// formatResult is what `call` prints for a result: the content — a JSON string as its
// text, any other JSON indented — and for an isError result first a line
// "error: <reason>: <message>". A nil result prints nothing.
func formatResult(r *v1alpha1.ToolResult) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	if r.IsError {
		b.WriteString(errorLine(r))
	}
	if r.Content != nil && len(r.Content.Raw) > 0 {
		b.WriteString(contentText(r.Content.Raw))
	}
	return b.String()
}

// errorLine is "error: <reason>: <message>\n", leaving out what is empty.
func errorLine(r *v1alpha1.ToolResult) string {
	parts := []string{"error"}
	if r.Reason != "" {
		parts = append(parts, r.Reason)
	}
	if r.Error != "" {
		parts = append(parts, r.Error)
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
		if s == "" || strings.HasSuffix(s, "\n") {
			return s
		}
		return s + "\n"
	}
	return prettyJSON(raw) + "\n"
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
		pairs = append(pairs, fmt.Sprintf("%s=%s", k, meta[k]))
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
