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

package canonjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// TestParseErrors checks the fields of the engine's refusals, which the pipeline maps to
// its FreezeError (TooLarge to ArgumentsTooLarge, the pointer as it is).
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		opts Options
		want Error // Msg: a part of the message
	}{
		{"too large", `[1,2,3]`, Options{MaxBytes: 6, MaxDepth: 8}, Error{TooLarge: true, Msg: "7 bytes, over the limit of 6 bytes"}},
		{"zero size limit", `1`, Options{MaxDepth: 8}, Error{TooLarge: true, Msg: "over the limit of 0 bytes"}},
		{"duplicate key", `{"a":{"b~":1,"b~":2}}`, Options{MaxBytes: 64, MaxDepth: 8}, Error{Pointer: "/a/b~0", Msg: `duplicate key "b~" (at /a/b~0)`}},
		{"lone surrogate", `["x","\ud800"]`, Options{MaxBytes: 64, MaxDepth: 8}, Error{Pointer: "/1", Msg: "lone UTF-16 surrogate (at /1)"}},
		{"too deep", `[[1]]`, Options{MaxBytes: 64, MaxDepth: 1}, Error{Pointer: "/0", Msg: "nested deeper than 1 levels"}},
		{"zero depth limit", `{}`, Options{MaxBytes: 64}, Error{Msg: "nested deeper than 0 levels"}},
		{"invalid UTF-8", "\"a\xff\"", Options{MaxBytes: 64, MaxDepth: 8}, Error{Msg: "not valid UTF-8 (byte 2)"}},
		{"trailing data", `1 2`, Options{MaxBytes: 64, MaxDepth: 8}, Error{Msg: "unexpected data after the value at byte 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, parse := range []func() (Document, error){
				func() (Document, error) { return Parse([]byte(tc.in), tc.opts) },
				func() (Document, error) { return ParseString(tc.in, tc.opts) },
			} {
				doc, err := parse()
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("Parse(%q) = %+v, %v; want an *Error", tc.in, doc, err)
				}
				if e.TooLarge != tc.want.TooLarge || e.Pointer != tc.want.Pointer || !strings.Contains(e.Msg, tc.want.Msg) {
					t.Errorf("error %+v, want %+v (Msg: a part)", *e, tc.want)
				}
			}
		})
	}
}

// TestParseDocument checks what a Document holds: the canonical text, its digest only
// when asked, the deepest level, and canonical string input kept as it is.
func TestParseDocument(t *testing.T) {
	in := `{ "b": [1E+05, {"c": null}], "a": "x" }`
	doc, err := Parse([]byte(in), Options{MaxBytes: 64, MaxDepth: 8, Digest: true})
	if err != nil {
		t.Fatal(err)
	}
	const canonical = `{"a":"x","b":[1e5,{"c":null}]}`
	want := Document{
		Value:     map[string]any{"a": "x", "b": []any{json.Number("1e5"), map[string]any{"c": nil}}},
		Canonical: canonical,
		Digest:    Digest([]byte(canonical)),
		Deepest:   3,
	}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("document (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(doc.Digest, "sha256:") || len(doc.Digest) != len("sha256:")+64 {
		t.Errorf("digest %q is not sha256:<hex>", doc.Digest)
	}

	s := canonical
	again, err := ParseString(s, Options{MaxBytes: 64, MaxDepth: 8})
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != "" {
		t.Errorf("digest %q computed without Options.Digest", again.Digest)
	}
	if unsafe.StringData(again.Canonical) != unsafe.StringData(s) {
		t.Errorf("canonical input was copied")
	}
}

func TestPointer(t *testing.T) {
	for _, tc := range []struct {
		tokens []string
		want   string
	}{
		{nil, ""},
		{[]string{""}, "/"},
		{[]string{"a/b", "m~n", "0"}, "/a~1b/m~0n/0"},
		{[]string{"~1"}, "/~01"},
	} {
		if got := Pointer(tc.tokens); got != tc.want {
			t.Errorf("Pointer(%q) = %q, want %q", tc.tokens, got, tc.want)
		}
	}
}
