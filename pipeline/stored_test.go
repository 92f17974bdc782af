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
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestBoundedFitsAndSaysSo(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		limit int
		cut   bool
	}{
		{"short", "hello", 10, false},
		{"exactly the limit", strings.Repeat("a", 64), 64, false},
		{"one over", strings.Repeat("a", 65), 64, true},
		{"large", strings.Repeat("x", 100<<10), 32768, true},
		{"multi-byte runes", strings.Repeat("é", 40<<10), MaxResultErrorBytes, true},
		{"invalid UTF-8", strings.Repeat("\xff", 2000), 1024, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := Bounded(tc.in, tc.limit)
			if cut != tc.cut || len(got) > tc.limit {
				t.Fatalf("cut %v, %d bytes; want cut %v, at most %d", cut, len(got), tc.cut, tc.limit)
			}
			if !cut {
				if got != tc.in {
					t.Errorf("changed a message that fits")
				}
				return
			}
			if !utf8.ValidString(got) || !strings.Contains(got, "truncated") || !strings.Contains(got, "bytes in full") {
				t.Errorf("a cut message must be valid UTF-8 and say it was cut: %q", got[max(0, len(got)-60):])
			}
		})
	}
}

func TestStoreResultCutsErrorAndContentTogether(t *testing.T) {
	msg := "arguments do not match: " + strings.Repeat("A", 100<<10)
	meta := map[string]string{MetaViolations: "1"}
	s, err := StoreResult(Result{IsError: true, Reason: ReasonSchemaViolation, Error: msg, Content: msg, Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	res := s.Result
	if len(res.Error) > MaxResultErrorBytes || res.Content != res.Error {
		t.Fatalf("error %d bytes, content %v", len(res.Error), res.Content == res.Error)
	}
	if res.Meta[MetaMessageBytes] != "102424" || res.Meta[MetaViolations] != "1" || len(meta) != 1 {
		t.Errorf("meta %v, the caller's %v", res.Meta, meta)
	}
	output := map[string]any{"big": strings.Repeat("o", 1<<10)}
	kept, err := StoreResult(Result{OK: true, Content: output})
	if err != nil || kept.Result.Meta != nil {
		t.Errorf("a result with no long error is unchanged: %v %v", kept.Result.Meta, err)
	}
}

// checkStored checks what stage 8 promises of any result: its error fits its field, its
// meta its key limit, its content is not cut (unless it is the error's text), and the
// stored content decodes to what the digest was made of.
func checkStored(t *testing.T, in Result) StoredResult {
	t.Helper()
	s, err := StoreResult(in)
	if err != nil {
		t.Fatalf("StoreResult: %v", err)
	}
	r := s.Result
	if len(r.Error) > MaxResultErrorBytes || len(r.Meta) > MaxResultMetaKeys {
		t.Fatalf("stored error of %d bytes, meta of %d keys", len(r.Error), len(r.Meta))
	}
	if cut := len(in.Error) > MaxResultErrorBytes; cut != (r.Meta[MetaMessageBytes] == strconv.Itoa(len(in.Error))) {
		t.Errorf("error cut %v, meta.messageBytes %q", cut, r.Meta[MetaMessageBytes])
	}
	if text, ok := in.Content.(string); ok && text != in.Error && r.Content != text {
		t.Errorf("content that is not the error's text was changed")
	}
	dec := json.NewDecoder(bytes.NewReader(s.Content))
	dec.UseNumber()
	var content any
	if in.Content != nil {
		if err := dec.Decode(&content); err != nil {
			t.Fatalf("stored content is not JSON: %v", err)
		}
	}
	again, err := FreezeResult(Result{OK: r.OK, IsError: r.IsError, Content: content, Error: r.Error, Reason: r.Reason, Meta: r.Meta})
	if err != nil || again.Digest() != s.Frozen.Digest() {
		t.Errorf("the stored content does not give the digest: %v", err)
	}
	return s
}

// The bound holds whichever stage made the result: normalisation, a refusal, post-execute
// (a Replace that grows the result, a Block, a withheld result) and a huge meta.
func TestStoreResultBoundHoldsOnEveryPath(t *testing.T) {
	c := newTestCompiler(t)
	huge := strings.Repeat("é", 40<<10)
	big := map[string]any{"rows": []any{strings.Repeat("r", 64<<10), json.Number("1.0")}}
	ok := Result{OK: true, Reason: ReasonSucceeded, Content: big, Meta: map[string]string{MetaAttempt: "1"}}
	grow := []PolicySpec{post("grow", 0, act("x4", `true`, ActionRedact,
		`[result.content, [result.content], {"a": result.content, "b": [result.content]}]`, ""))}
	grown, d := PostExecute(c.CompilePolicies(grow), Input{}, ok, nil)
	if d.Reason != ReasonResultRedacted {
		t.Fatalf("the Replace did not apply: %+v", d)
	}
	block := []PolicySpec{post("b", 0, act("all", `true`, ActionBlock, "", strings.Repeat("m", 1024)))}
	blocked, _ := PostExecute(c.CompilePolicies(block), Input{}, ok, nil)
	withheld, _ := Withhold(ok, ReasonPolicyError, huge)
	metaFull := map[string]string{}
	for i := range MaxResultMetaKeys - 1 {
		metaFull[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", 8<<10)
	}
	cases := map[string]Result{
		"normalised exit failure": Normalize(Outcome{Started: true, Attempt: 1,
			Report: &Report{ExitCode: 1, StderrTail: huge, Stdout: []byte(`{"n":1E+2}`)}}, NormalizeOptions{}),
		"normalised tool error": Normalize(Outcome{Started: true, Attempt: 1,
			Report: &Report{Stdout: []byte(`{"isError":true,"error":"` + huge + `"}`)}}, NormalizeOptions{}),
		"refusal with a long message":            {IsError: true, Reason: ReasonSchemaViolation, Error: huge + huge, Content: huge + huge},
		"replace that grows the result":          grown,
		"block":                                  blocked,
		"withheld":                               withheld,
		"huge meta and a long error":             {IsError: true, Reason: ReasonNonZeroExit, Error: huge + huge, Content: big, Meta: metaFull},
		"huge meta, content the error's text":    {IsError: true, Reason: ReasonNonZeroExit, Error: huge + huge, Content: huge + huge, Meta: metaFull},
		"a grown result with a long tool error":  {IsError: true, Reason: ReasonToolError, Error: huge + huge, Content: grown.Content},
		"a success whose content is a long text": {OK: true, Reason: ReasonSucceeded, Content: huge + huge + huge},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			before := maps.Clone(in.Meta)
			s := checkStored(t, in)
			if !maps.Equal(before, in.Meta) {
				t.Errorf("the caller's meta changed")
			}
			if name == "replace that grows the result" && len(s.Content) < 4*(64<<10) {
				t.Errorf("the grown content was cut to %d bytes", len(s.Content))
			}
		})
	}

	over := maps.Clone(metaFull)
	over["k98"], over["k99"] = "x", "y"
	if _, err := StoreResult(Result{OK: true, Content: "x", Meta: over}); err == nil {
		t.Errorf("a meta of %d keys was stored; the API server refuses more than %d", len(over), MaxResultMetaKeys)
	}
}

// Numbers are stored as the API server keeps them: an int64 for an integer literal that
// fits, else the nearest float64 as encoding/json prints it (-0 read back as 0).
func TestStoreResultNumbersAsTheAPIServerStores(t *testing.T) {
	cases := []struct{ in, want string }{
		{"1", "1"}, {"-7", "-7"}, {"0", "0"}, {"-0", "0"}, {"-0.0", "0"}, {"1.0", "1"}, {"1E+2", "100"},
		{"1.5", "1.5"}, {"9223372036854775807", "9223372036854775807"},
		{"9223372036854775808", "9223372036854776000"}, {"123456789012345678901234567890", "1.2345678901234568e29"},
		{"1e20", "100000000000000000000"}, {"1e21", "1e21"}, {"0.000001", "0.000001"}, {"1e-7", "1e-7"},
		{"1e-400", "0"}, {"2.50", "2.5"},
	}
	for _, tc := range cases {
		s, err := StoreResult(Result{OK: true, Content: []any{json.Number(tc.in)}})
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got := string(s.Content); got != "["+tc.want+"]" {
			t.Errorf("%s is stored as %s, want [%s]", tc.in, got, tc.want)
		}
	}
	for _, bad := range []any{json.Number("1e400"), json.Number("0x10"), json.Number("Inf"), json.Number("01"),
		json.Number("+1"), json.Number(".5"), math.NaN(), math.Inf(-1), "\xff"} {
		if s, err := StoreResult(Result{OK: true, Content: map[string]any{"n": bad}}); err == nil {
			t.Errorf("%#v was stored as %s", bad, s.Content)
		}
	}
	// Go numbers of a tree built outside the decoder are stored alike.
	s, err := StoreResult(Result{OK: true, Content: []any{1.0, 2.5, 3, int64(4), 1e21}})
	if err != nil || string(s.Content) != "[1,2.5,3,4,1e21]" {
		t.Errorf("stored %s, %v", s.Content, err)
	}
}

// The caller's content is neither changed nor copied, not even where its numbers are
// stored in another form: the stored form is made by the one encoding, not by rewriting
// the tree.
func TestStoreResultCopiesNothing(t *testing.T) {
	in := map[string]any{"a": json.Number("1.0"), "b": []any{json.Number("1E+2"), "x"}, "c": map[string]any{"d": "e"}}
	want := map[string]any{"a": json.Number("1.0"), "b": []any{json.Number("1E+2"), "x"}, "c": map[string]any{"d": "e"}}
	s, err := StoreResult(Result{OK: true, Content: in})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("the caller's content changed (-want +got):\n%s", diff)
	}
	if got := string(s.Content); got != `{"a":1,"b":[100,"x"],"c":{"d":"e"}}` {
		t.Errorf("stored %s", got)
	}
	if m, ok := s.Result.Content.(map[string]any); !ok || fmt.Sprintf("%p", m) != fmt.Sprintf("%p", in) {
		t.Errorf("the content's tree was copied")
	}
	if !strings.HasPrefix(s.Frozen.String(), `{"content":`+string(s.Content)+`,`) {
		t.Errorf("the stored content is not what the digest was made of: %s", s.Frozen.String())
	}
}

// A result without content is stored without it; its digest is of content null.
func TestStoreResultWithoutContent(t *testing.T) {
	s, err := StoreResult(Result{IsError: true, Reason: ReasonJobDeleted, Error: "x"})
	if err != nil || s.Content != nil {
		t.Fatalf("content %q, %v", s.Content, err)
	}
	if !strings.HasPrefix(s.Frozen.String(), `{"content":null,`) {
		t.Errorf("canonical %s", s.Frozen.String())
	}
}

func BenchmarkStoreResult(b *testing.B) {
	items := make([]any, 1024)
	for i := range items {
		items[i] = map[string]any{"name": fmt.Sprintf("item-%d", i), "size": json.Number("1.0"), "n": json.Number("3")}
	}
	for _, tc := range []struct {
		name    string
		content any
	}{{"numbers-rewritten", map[string]any{"items": items}}, {"text-64KiB", strings.Repeat("t", 64<<10)}} {
		r := Result{OK: true, Reason: ReasonSucceeded, Content: tc.content, Meta: map[string]string{MetaAttempt: "1"}}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := StoreResult(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
