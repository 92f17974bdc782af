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
	"strconv"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// FuzzCanonicalJCS is a differential test of the canonical form against an independent
// RFC 8785 (JCS) implementation, github.com/gowebpki/jcs. toolgate departs from RFC 8785
// in three documented ways (canonical.go, docs/fuzzing.md), which the test maps out
// rather than ignores:
//   - numbers keep their literal text (exponent normalised), where JCS re-serialises them
//     through IEEE 754 in ECMAScript form: when every number of the document is already
//     in that form (1, -7, 0.5, 1e-7), the two canonical forms must be byte for byte
//     equal; otherwise toolgate's canonical bytes must canonicalise, under JCS, to what
//     the input does (same structure, keys, order, strings, and numbers equal as
//     doubles);
//   - numbers beyond float64 (1e400) are kept exactly, where JCS refuses them: toolgate
//     may accept a document JCS refuses only when it holds such a number;
//   - nesting is limited (here 64 levels, JCS allows 10,000): toolgate may refuse a
//     document JCS accepts only for its depth (duplicate keys, lone surrogates and invalid
//     UTF-8 both refuse).
func FuzzCanonicalJCS(f *testing.F) {
	for _, s := range []string{
		`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`,
		`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
		`{"1":{"f":{"f":"hi","F":5},"\n":56.0},"10":{},"":"empty","a":{},"111":[{"e":"yes","E":"no"}],"A":{}}`,
		`[56,{"d":true,"10":null,"1":[]}]`,
		`{"a":[1,-7,0.5,1e-7,100,-0.25]}`, `[-0, 0.0, 1.0, 1e400, 1e-400, 18446744073709551617]`,
		`"\u0000\u001f\b\f\n\r\t\"\\/"`, `{"a":1,"a":2}`, `["\ud800"]`, "[\"\xff\"]", ` [ 1 , 2 ] `,
		`{"\ue000":1,"\ud800\udc00":2}`, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 1<<16 {
			return
		}
		doc, err := Parse(in, Options{MaxBytes: 1 << 16, MaxDepth: 64})
		want, jerr := jcs.Transform(in)
		switch {
		case err != nil && jerr == nil:
			var pe *Error
			if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "nested deeper") {
				t.Fatalf("toolgate refuses %q (%v), which JCS accepts as %q", in, err, want)
			}
		case err == nil && jerr != nil:
			if !hasNumberBeyondFloat64(doc.Value) {
				t.Fatalf("toolgate accepts %q as %q, which JCS refuses (%v)", in, doc.Canonical, jerr)
			}
		case err == nil:
			if ecmaNumbersOnly(doc.Value) {
				if doc.Canonical != string(want) {
					t.Fatalf("canonical forms differ for %q:\ntoolgate %q\nJCS      %q", in, doc.Canonical, want)
				}
				return
			}
			again, err := jcs.Transform([]byte(doc.Canonical))
			if err != nil || string(again) != string(want) {
				t.Fatalf("toolgate's canonical %q of %q is %q under JCS (%v), the input %q", doc.Canonical, in, again, err, want)
			}
		}
	})
}

// walkNumbers reports whether every json.Number of the tree satisfies ok.
func walkNumbers(v any, ok func(json.Number) bool) bool {
	switch t := v.(type) {
	case json.Number:
		return ok(t)
	case []any:
		for _, e := range t {
			if !walkNumbers(e, ok) {
				return false
			}
		}
	case map[string]any:
		for _, e := range t {
			if !walkNumbers(e, ok) {
				return false
			}
		}
	}
	return true
}

// ecmaNumbersOnly reports whether every number of the tree is written as RFC 8785
// (ECMAScript's Number.prototype.toString) writes its double: the shared domain.
func ecmaNumbersOnly(v any) bool {
	return walkNumbers(v, func(n json.Number) bool {
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return false
		}
		s, err := jcs.NumberToJSON(f)
		return err == nil && s == string(n)
	})
}

// hasNumberBeyondFloat64 reports whether some number of the tree overflows a double.
func hasNumberBeyondFloat64(v any) bool {
	return !walkNumbers(v, func(n json.Number) bool {
		_, err := strconv.ParseFloat(string(n), 64)
		return err == nil
	})
}
