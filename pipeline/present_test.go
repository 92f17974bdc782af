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
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestPresent(t *testing.T) {
	c, err := NewCompiler(CompilerOptions{CostLimit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	in := testInput(t, `{"pattern":"TODO","path":"src","l":[`+strings.TrimSuffix(strings.Repeat("1,", 300), ",")+`]}`)
	res := Result{OK: true, Content: map[string]any{"matches": []any{"a", "b"}}}
	tests := []struct {
		name    string
		expr    string
		result  *Result
		want    string
		wantErr string
	}{
		{"call", `"grep " + arguments.pattern + " in " + arguments.path + " for " + call.requester`, nil, "grep TODO in src for alice", ""},
		{"result", `tool.name + ": " + string(result.content.matches.size()) + " matches"`, &res, "grep: 2 matches", ""},
		{"optional", `arguments.?missing.orValue("-")`, nil, "-", ""},
		{"not a string", `1 + 1`, nil, "", "want string"},
		{"dyn not a string at runtime", `arguments.l`, nil, "", "want string"},
		{"syntax", `"a" +`, nil, "", "presentation expression"},
		{"result unknown in present-call", `result.isError ? "x" : "y"`, nil, "", "undeclared reference to 'result'"},
		{"cost limit", `arguments.l.map(x, arguments.l.map(y, x)).size() > 0 ? "big" : "small"`, nil, "", "cost limit exceeded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			var err error
			if tc.result != nil {
				got, err = c.PresentResult(tc.expr, in, *tc.result)
			} else {
				got, err = c.PresentCall(tc.expr, in)
			}
			if tc.wantErr == "" && err != nil {
				t.Fatalf("error: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPresentClipped(t *testing.T) {
	c := newTestCompiler(t)
	long := strings.Repeat("é", MaxPresentBytes)
	got, err := c.PresentCall(`arguments.s`, testInput(t, `{"s":"`+long+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > MaxPresentBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("clipped text: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}

func TestCheckPresentation(t *testing.T) {
	c := newTestCompiler(t)
	tests := []struct {
		call, result, wantErr string
	}{
		{"", "", ""},
		{`"grep " + arguments.pattern`, `result.isError ? "failed" : "ok"`, ""},
		{`result.isError ? "a" : "b"`, "", "present call"},
		{"", `1`, "present result"},
	}
	for _, tc := range tests {
		err := c.CheckPresentation(tc.call, tc.result)
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("CheckPresentation(%q, %q) = %v, want %q", tc.call, tc.result, err, tc.wantErr)
		}
	}
}
