/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package pipeline

import (
	"maps"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzPostExecute runs stage 6 over random results, rules and output schemas: nothing
// panics; the result is always freezable (a Redact's CEL value included) and consistent
// (OK is !IsError, an error has a reason and a message); a Deny is always an isError
// result with one of the stage's reasons; a result that is not an error after the stage
// validates against the output schema; the caller's meta is never changed.
func FuzzPostExecute(f *testing.F) {
	f.Add([]byte(`{"token":"s3cr3t","n":2}`), false, `has(result.content.token)`, `{"token": "***", "n": result.content.n + 1}`,
		[]byte(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`), byte(2))
	f.Add([]byte(`"plain text"`), false, `result.content.size() > 3`, ``, []byte(`{"type":"string","maxLength":5}`), byte(1))
	f.Add([]byte(`[1,2,3]`), true, `result.isError`, `result.content.map(x, x * 2)`, []byte(`{"type":"array","items":{"type":"integer","maximum":4}}`), byte(2))
	f.Add([]byte(`{"a":1e400}`), false, `true`, `double(result.content.a) * 0.0`, []byte(`true`), byte(2))
	f.Add([]byte(`{"b":"x"}`), false, `true`, `b"\xff"`, []byte(`{}`), byte(2))
	f.Add([]byte(`{"b":"x"}`), false, `true`, `string(b"\xc3\xa9") + "\u00e9"`, []byte(`{"not":{}}`), byte(0))
	c, err := NewCompiler(CompilerOptions{CacheSize: 256})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, content []byte, isError bool, when, replace string, schema []byte, action byte) {
		in := Result{OK: !isError, IsError: isError, Content: resultContent(content), Reason: ReasonSucceeded,
			Meta: map[string]string{MetaAttempt: "1"}}
		if isError {
			in.Reason, in.Error = ReasonToolError, "the tool reported an error"
		}
		meta := maps.Clone(in.Meta)
		var output *Schema
		if len(schema) > 0 {
			output, _ = c.CompileSchema(schema) // an invalid schema is Withhold's case, not this stage's
		}
		actions := []Action{ActionAccept, ActionBlock, ActionRedact}
		p := c.CompilePolicy(PolicySpec{Name: "p", Stage: StagePostExecute, Rules: []Rule{
			{Name: "r", Expression: when, Action: actions[int(action)%len(actions)], Replace: replace}}})
		out, d := PostExecute([]*Policy{p}, Input{Tool: ToolInfo{Name: "t"}}, in, output)
		checkPostExecute(t, in, out, d, output)
		if !maps.Equal(in.Meta, meta) {
			t.Fatalf("PostExecute changed the caller's meta: %v", in.Meta)
		}
	})
}

func checkPostExecute(t *testing.T, in, out Result, d Decision, output *Schema) {
	t.Helper()
	if out.OK == out.IsError || out.Reason == "" || out.IsError && out.Error == "" {
		t.Fatalf("inconsistent result %+v", out)
	}
	if _, err := FreezeResult(out); err != nil {
		t.Fatalf("the stage's result does not freeze: %v (%+v)", err, out)
	}
	switch d.Verdict {
	case Deny:
		ok := d.Reason == ReasonResultBlocked || d.Reason == ReasonPolicyError || d.Reason == ReasonOutputSchemaViolation
		if !out.IsError || out.Reason != d.Reason || !ok {
			t.Fatalf("Deny %s with result %+v", d.Reason, out)
		}
	case Allow:
		if out.IsError != in.IsError || (d.Reason == ReasonResultRedacted) != (out.Meta[MetaRedacted] == "true") {
			t.Fatalf("Allow %s changed the result's nature: %+v", d.Reason, out)
		}
	default:
		t.Fatalf("verdict %q", d.Verdict)
	}
	if output != nil && !out.IsError {
		if val := output.ValidateValue(out.Content); !val.Valid() {
			t.Fatalf("a result that violates the output schema passed: %+v", val)
		}
	}
	if s, ok := out.Content.(string); ok && !utf8.ValidString(s) {
		t.Fatalf("content is not UTF-8")
	}
}

// resultContent is a tool's output as Normalize gives it: the JSON value when it parses,
// else the text (made valid UTF-8, as a result that reaches this stage is).
func resultContent(b []byte) any {
	if v, err := decodeJSON(string(b), FreezeOptions{MaxBytes: 1 << 16, MaxDepth: 32}); err == nil {
		return v
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// FuzzUTF8Prefix: the cut is a prefix of at most n bytes, never ends inside a character,
// keeps valid UTF-8 valid, and cuts at most the three bytes of a partial character.
func FuzzUTF8Prefix(f *testing.F) {
	for _, s := range []string{"", "abc", "é", "a😀b", "\xff\xfe", "\x80\x80\x80a", "日本語のテキスト"} {
		for _, n := range []int{-1, 0, 1, 2, 3, 5, 100} {
			f.Add(s, n)
		}
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		out := UTF8Prefix(s, n)
		if !strings.HasPrefix(s, out) || len(out) > max(n, 0) {
			t.Fatalf("UTF8Prefix(%q, %d) = %q: not a prefix of at most n bytes", s, n, out)
		}
		if len(out) < len(s) && len(out) > 0 && !utf8.RuneStart(s[len(out)]) {
			t.Fatalf("UTF8Prefix(%q, %d) = %q ends inside a character", s, n, out)
		}
		if utf8.ValidString(s) {
			if !utf8.ValidString(out) {
				t.Fatalf("UTF8Prefix(%q, %d) = %q is not UTF-8", s, n, out)
			}
			if n > 0 && len(out) < min(n, len(s))-(utf8.UTFMax-1) {
				t.Fatalf("UTF8Prefix(%q, %d) = %q cuts more than a partial character", s, n, out)
			}
		}
	})
}
