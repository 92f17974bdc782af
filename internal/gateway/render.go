package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/toolgate/toolgate/pkg/display"
)

// Bounds of the text an error result's fields are rendered as (structuredContent, when
// sent, carries them whole).
const (
	// maxFieldText bounds one field, in bytes of its value: the first fieldHead bytes and
	// the last maxFieldText-fieldHead are kept, with a marker for what is left out.
	maxFieldText = 32 << 10
	fieldHead    = 8 << 10
	// maxFieldsText bounds the fields' text together: the fields past it are counted, not shown.
	maxFieldsText = 96 << 10
	// maxInline is the longest one-line string value shown on its field's own line.
	maxInline = 200
)

// firstFields are shown first, in this order: what a failed command left.
var firstFields = []string{"exitCode", "stdout", "stderr"}

// multiline shows what a caller or a tool wrote with newlines and tabs kept and every other
// control character, ANSI escape and invisible character escaped (pkg/display). Lines are
// not cut: the bounds here are in bytes.
var multiline = display.Options{Multiline: true}

// resultText is the text item of a finished call's result: the content for a success,
// errorText for an error.
func resultText(call *callView, isError bool) string {
	if !isError {
		return contentText(call.content)
	}
	return errorText(call)
}

// callView is what the text of a result is made from.
type callView struct {
	name, phase, reason, message string
	content                      []byte // the result's JSON content, nil without
}

// contentText renders content: a JSON string as its text, any other JSON compact (jsonText),
// null as nothing.
func contentText(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return multiline.String(s)
	}
	return jsonText(raw)
}

// errorText renders an error result: its message, then the content's fields when it is a
// JSON object (exitCode, stdout, stderr first), or the content when it says more than the
// message (the output of a tool that exited non-zero).
func errorText(call *callView) string {
	parts := []string{multiline.String(strings.TrimSpace(call.message))}
	raw := bytes.TrimSpace(call.content)
	var obj map[string]json.RawMessage
	switch {
	case len(raw) == 0 || string(raw) == "null" || sameText(raw, call.message):
	case raw[0] == '{' && json.Unmarshal(raw, &obj) == nil:
		parts = append(parts, fieldsText(obj, call.message))
	default:
		var s string
		if json.Unmarshal(raw, &s) == nil {
			parts = append(parts, multiline.String(bound(s)))
		} else {
			parts = append(parts, bound(jsonText(raw)))
		}
	}
	parts = slices.DeleteFunc(parts, func(p string) bool { return p == "" })
	if len(parts) == 0 {
		return fmt.Sprintf("the call %s ended in phase %s without a message (reason %q)", call.name, call.phase, call.reason)
	}
	return strings.Join(parts, "\n\n")
}

// sameText reports whether raw is the JSON string s (a failure's content repeats its message).
func sameText(raw []byte, s string) bool {
	var text string
	return json.Unmarshal(raw, &text) == nil && strings.TrimSpace(text) == strings.TrimSpace(s)
}

// fieldsText renders an error object's fields, one per line or block, leaving out isError
// and the field the message came from.
func fieldsText(obj map[string]json.RawMessage, message string) string {
	delete(obj, "isError")
	for _, k := range []string{"error", "message"} {
		var s string
		if message != "" && json.Unmarshal(obj[k], &s) == nil && strings.HasSuffix(strings.TrimSpace(s), strings.TrimSpace(message)) {
			delete(obj, k) // the message is this field (cut to its end when long)
			break
		}
	}
	var b strings.Builder
	keys := orderedKeys(obj)
	for i, k := range keys {
		field := fieldText(k, obj[k])
		if b.Len()+len(field) > maxFieldsText {
			fmt.Fprintf(&b, "[%d more fields left out]\n", len(keys)-i)
			break
		}
		b.WriteString(field)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// orderedKeys are firstFields present in obj, then the other keys sorted.
func orderedKeys(obj map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(obj))
	for _, k := range firstFields {
		if _, ok := obj[k]; ok {
			keys = append(keys, k)
		}
	}
	var rest []string
	for k := range obj {
		if !slices.Contains(firstFields, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(keys, rest...)
}

// fieldText is one field, newline-terminated: "key: value" for a short one-line string or
// any other JSON value, "key (N bytes):" and the text below it for a longer string.
func fieldText(key string, raw json.RawMessage) string {
	key = display.Line(key)
	var s string
	switch {
	case json.Unmarshal(raw, &s) != nil:
		return key + ": " + bound(jsonText(raw)) + "\n"
	case s == "":
		return key + ": (empty)\n"
	case len(s) <= maxInline && !strings.ContainsAny(s, "\n\r"):
		return key + ": " + display.Line(s) + "\n"
	}
	text := multiline.String(bound(s))
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return fmt.Sprintf("%s (%d bytes):\n%s", key, len(s), text)
}

// bound keeps the first fieldHead and the last maxFieldText-fieldHead bytes of s, on
// character boundaries, and says how many bytes it left out between them.
func bound(s string) string {
	if len(s) <= maxFieldText {
		return s
	}
	head, tail := fieldHead, len(s)-(maxFieldText-fieldHead)
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return fmt.Sprintf("%s\n[… %d bytes left out …]\n%s", s[:head], tail-head, s[tail:])
}

// jsonText is raw as compact JSON in which every character pkg/display would escape is a
// JSON escape (\u202e, \u007f …): the same JSON value, shown safely. Raw that is not JSON
// is shown as text.
func jsonText(raw []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return multiline.String(string(raw))
	}
	s := strings.ToValidUTF8(buf.String(), "\uFFFD")
	if display.Line(s) == s {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		switch {
		case r >= 0x20 && r < 0x7f, r >= utf8.RuneSelf && display.Line(string(r)) == string(r):
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
