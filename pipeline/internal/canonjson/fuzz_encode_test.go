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
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzEncodeCanonical checks the canonical encoder of results (AppendValue, over trees
// built in Go) against the parser's canonical writer (Parse, for arguments): the same
// JSON gives the same bytes and digest by both paths; the encoding of a tree with
// float64 numbers (as Go code builds them) parses to itself; and decoding the canonical
// bytes gives the tree back. Its domain is what the pipeline's Freeze accepts, JSON
// objects, which its corpus was grown on.
func FuzzEncodeCanonical(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"b":[1,2.5,-0,1E+05,"x\u0000y"],"a":{"\ue000":null,"\ud83d\ude00":true}}`,
		`{"n":18446744073709551617,"f":1e400,"g":0.1,"h":1e-7}`, `{"s":"\"\\\/\b\f\n\r\t\u001f\u007f\u2028"}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		doc, err := Parse(in, Options{MaxBytes: 1 << 16, MaxDepth: 32, Digest: true})
		if err != nil {
			return
		}
		if _, ok := doc.Value.(map[string]any); !ok {
			return
		}
		var tree any
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			t.Fatalf("encoding/json refuses what Parse accepts: %v", err)
		}
		enc, err := AppendValue(nil, tree, 0)
		if err != nil || string(enc) != doc.Canonical || Digest(enc) != doc.Digest {
			t.Fatalf("AppendValue %q (%v), Parse %q", enc, err, doc.Canonical)
		}
		var back any
		dec = json.NewDecoder(bytes.NewReader(enc))
		dec.UseNumber()
		if err := dec.Decode(&back); err != nil {
			t.Fatalf("canonical bytes do not decode: %v", err)
		}
		if diff := cmp.Diff(canonicalNumbers(tree), back); diff != "" {
			t.Fatalf("decoded canonical bytes differ from the tree:\n%s", diff)
		}
		var floats any
		if json.Unmarshal(in, &floats) != nil {
			return // a number beyond float64
		}
		fenc, err := AppendValue(nil, floats, 0)
		if err != nil {
			t.Fatalf("AppendValue of float64 numbers: %v", err)
		}
		again, err := Parse(fenc, Options{MaxBytes: len(fenc), MaxDepth: MaxEncodeDepth})
		if err != nil || again.Canonical != string(fenc) {
			t.Fatalf("encoding %q of float64 numbers is not canonical: %v", fenc, err)
		}
	})
}

// canonicalNumbers applies the exponent normalisation to every number of a tree.
func canonicalNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		return json.Number(NormalizeNumber(string(t)))
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = canonicalNumbers(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = canonicalNumbers(e)
		}
		return out
	}
	return v
}
