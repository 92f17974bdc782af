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
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/pipeline/internal/canonjson"
)

func TestFreezeCanonical(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"sorted keys, no whitespace", `{ "b" : 1 , "a" : [ true , false , null ] }`, `{"a":[true,false,null],"b":1}`},
		{"nested objects sorted", `{"z":{"y":1,"x":2},"a":{}}`, `{"a":{},"z":{"x":2,"y":1}}`},
		{"numbers kept exact", `{"big":1e400,"tenth":0.1,"huge":18446744073709551617,"neg":-0,"f":1.50}`,
			`{"big":1e400,"f":1.50,"huge":18446744073709551617,"neg":-0,"tenth":0.1}`},
		{"exponent normalised", `{"a":1E+05,"b":2e-007,"c":3E0,"d":4e00,"e":5e-0}`, `{"a":1e5,"b":2e-7,"c":3e0,"d":4e0,"e":5e0}`},
		{"integers stay integers", `{"a":100,"b":1e2}`, `{"a":100,"b":1e2}`},
		{"escapes minimal", `{"s":"a\/b\u0041\u00e9\"\\\n\t\b\f\r\u0001\u007f\u2028"}`,
			"{\"s\":\"a/bAé\\\"\\\\\\n\\t\\b\\f\\r\\u0001\u007f\u2028\"}"},
		{"raw UTF-8 kept", `{"k":"日本語 😀"}`, `{"k":"日本語 😀"}`},
		{"surrogate pair decoded", `{"k":"\ud83d\ude00"}`, `{"k":"😀"}`},
		{"UTF-16 key order", "{\"\uff61\":1,\"\U0001f600\":2,\"a\":3}", "{\"a\":3,\"\U0001f600\":2,\"\uff61\":1}"},
		{"empty object", ` {} `, `{}`},
		{"html not escaped", `{"h":"<a>&</a>"}`, `{"h":"<a>&</a>"}`},
		{"canonical escapes kept", `{"s":"a\n\t\"\\\u001f\u0000b"}`, `{"s":"a\n\t\"\\\u001f\u0000b"}`},
		{"other escapes rewritten", `{"s":"\u001F\u0008\u000a\u0022\u005c\u0041"}`, `{"s":"\u001f\b\n\"\\A"}`},
		{"escaped keys sorted by value", `{"\u0062":1,"a\n":2,"a":3}`, `{"a":3,"a\n":2,"b":1}`},
		{"members reordered at every level", `{"z":[{"d":{"f":1,"e":[{"h":1,"g":2}]},"c":0}],"y":{"b":1,"a":{"k":1,"j":2}}}`,
			`{"y":{"a":{"j":2,"k":1},"b":1},"z":[{"c":0,"d":{"e":[{"g":2,"h":1}],"f":1}}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Freeze([]byte(tc.in), FreezeOptions{})
			if err != nil {
				t.Fatalf("Freeze: %v", err)
			}
			if diff := cmp.Diff(tc.want, string(f.Canonical())); diff != "" {
				t.Errorf("canonical (-want +got):\n%s", diff)
			}
			checkEncoding(t, f)
			checkAgainstStdlib(t, []byte(tc.in), f)
			if diff := cmp.Diff(canonjson.Digest([]byte(tc.want)), f.Digest()); diff != "" {
				t.Errorf("digest (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFreezeErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		opts    FreezeOptions
		reason  Reason
		pointer string
		msg     string
	}{
		{"duplicate key", `{"a":1,"a":2}`, FreezeOptions{}, ReasonArgumentsNotObject, "/a", `duplicate key "a"`},
		{"duplicate after unescape", `{"x":{"a":1,"\u0061":2}}`, FreezeOptions{}, ReasonArgumentsNotObject, "/x/a", "duplicate key"},
		{"duplicate deep in array", `{"l":[0,{"k~/":1,"k~/":1}]}`, FreezeOptions{}, ReasonArgumentsNotObject, "/l/1/k~0~1", "duplicate key"},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", FreezeOptions{}, ReasonArgumentsNotObject, "", "not valid UTF-8 (byte 6)"},
		{"lone high surrogate", `{"a":"\ud800"}`, FreezeOptions{}, ReasonArgumentsNotObject, "/a", "lone UTF-16 surrogate"},
		{"lone low surrogate", `{"a":"\udc00x"}`, FreezeOptions{}, ReasonArgumentsNotObject, "/a", "lone UTF-16 surrogate"},
		{"reversed pair", `{"a":"\ude00\ud83d"}`, FreezeOptions{}, ReasonArgumentsNotObject, "/a", "lone UTF-16 surrogate"},
		{"array top level", `[1]`, FreezeOptions{}, ReasonArgumentsNotObject, "", "must be a JSON object, not an array"},
		{"string top level", `"x"`, FreezeOptions{}, ReasonArgumentsNotObject, "", "not a string"},
		{"trailing data", `{} {}`, FreezeOptions{}, ReasonArgumentsNotObject, "", "unexpected data after the value"},
		{"empty", ``, FreezeOptions{}, ReasonArgumentsNotObject, "", "unexpected end of input"},
		{"syntax", `{"a":tru}`, FreezeOptions{}, ReasonArgumentsNotObject, "/a", "unexpected character"},
		{"bad number", `{"a":01}`, FreezeOptions{}, ReasonArgumentsNotObject, "/a", "malformed number"},
		{"trailing comma", `{"a":1,}`, FreezeOptions{}, ReasonArgumentsNotObject, "", "unexpected character '}'"},
		{"control char", "{\"a\":\"x\ny\"}", FreezeOptions{}, ReasonArgumentsNotObject, "/a", "control character"},
		{"too large", `{"a":"` + strings.Repeat("x", 100) + `"}`, FreezeOptions{MaxBytes: 64}, ReasonArgumentsTooLarge, "", "over the limit of 64 bytes"},
		{"too deep", `{"a":[[[1]]]}`, FreezeOptions{MaxDepth: 3}, ReasonArgumentsNotObject, "/a/0/0", "deeper than 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Freeze([]byte(tc.in), tc.opts)
			if err == nil {
				t.Fatalf("Freeze(%q) = %s, want error", tc.in, f)
			}
			var fe *FreezeError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FreezeError", err)
			}
			got := struct {
				Reason  Reason
				Pointer string
			}{fe.Reason, fe.Pointer}
			want := struct {
				Reason  Reason
				Pointer string
			}{tc.reason, tc.pointer}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !strings.Contains(fe.Msg, tc.msg) {
				t.Errorf("message %q does not contain %q", fe.Msg, tc.msg)
			}
		})
	}
}

func TestFreezeDefaultLimit(t *testing.T) {
	pad := strings.Repeat("x", DefaultMaxArgumentBytes-10)
	if _, err := Freeze([]byte(`{"a":"`+pad+`"}`), FreezeOptions{}); err != nil {
		t.Fatalf("just under the limit: %v", err)
	}
	_, err := Freeze([]byte(`{"a":"`+pad+`xxxxx"}`), FreezeOptions{})
	var fe *FreezeError
	if !errors.As(err, &fe) || fe.Reason != ReasonArgumentsTooLarge {
		t.Fatalf("over the limit: got %v, want ArgumentsTooLarge", err)
	}
}

// TestFreezeImmutable shows that nothing a later stage gets from a Frozen aliases it.
func TestFreezeImmutable(t *testing.T) {
	f, err := Freeze([]byte(`{"a":{"b":[1,"x"]},"c":"d"}`), FreezeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	canon, digest := f.String(), f.Digest()

	b := f.Canonical()
	b[0] = 'X'
	v := f.Value().(map[string]any)
	v["c"] = "changed"
	v["a"].(map[string]any)["b"].([]any)[0] = "changed"
	delete(v, "a")

	if diff := cmp.Diff(canon, string(f.Canonical())); diff != "" {
		t.Errorf("canonical changed (-before +after):\n%s", diff)
	}
	if f.Digest() != digest {
		t.Errorf("digest changed")
	}
	want := map[string]any{"a": map[string]any{"b": []any{json.Number("1"), "x"}}, "c": "d"}
	if diff := cmp.Diff(want, f.Value()); diff != "" {
		t.Errorf("value changed (-want +got):\n%s", diff)
	}
}

// randomJSON builds a random JSON object text with random whitespace; the same seed
// gives the same members, shuffle reorders the members of every object.
func randomJSON(r *rand.Rand, depth int, shuffle *rand.Rand) string {
	n := r.IntN(5)
	members := make([]string, 0, n)
	for i := range n {
		members = append(members, ws(shuffle)+`"k`+string(rune('a'+i))+string(rune('α'+r.IntN(3)))+`"`+ws(shuffle)+":"+ws(shuffle)+randomValue(r, depth, shuffle))
	}
	shuffle.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	return "{" + strings.Join(members, ",") + ws(shuffle) + "}"
}

func randomValue(r *rand.Rand, depth int, shuffle *rand.Rand) string {
	scalars := []string{`1`, `-0.5`, `1e400`, `12345678901234567890`, `"s"`, `"\u00e9\n"`, `true`, `false`, `null`, `"😀"`}
	if depth > 2 {
		return scalars[r.IntN(len(scalars))]
	}
	switch r.IntN(4) {
	case 0:
		return randomJSON(r, depth+1, shuffle)
	case 1:
		return "[" + randomValue(r, depth+1, shuffle) + "," + ws(shuffle) + randomValue(r, depth+1, shuffle) + "]"
	}
	return scalars[r.IntN(len(scalars))]
}

func ws(r *rand.Rand) string { return []string{"", " ", "\n\t", "  "}[r.IntN(4)] }

func TestFreezeProperties(t *testing.T) {
	for seed := range uint64(300) {
		text := randomJSON(rand.New(rand.NewPCG(seed, 1)), 0, rand.New(rand.NewPCG(seed, 2)))
		reordered := randomJSON(rand.New(rand.NewPCG(seed, 1)), 0, rand.New(rand.NewPCG(seed, 3)))
		f1, err := Freeze([]byte(text), FreezeOptions{})
		if err != nil {
			t.Fatalf("seed %d: Freeze(%s): %v", seed, text, err)
		}
		// Idempotent: freezing the canonical form gives the same bytes.
		f2, err := Freeze(f1.Canonical(), FreezeOptions{})
		if err != nil || f2.String() != f1.String() {
			t.Fatalf("seed %d: not idempotent: %s -> %v, %v", seed, f1, f2, err)
		}
		// Key order and whitespace independent, digest stable.
		f3, err := Freeze([]byte(reordered), FreezeOptions{})
		if err != nil {
			t.Fatalf("seed %d: Freeze(%s): %v", seed, reordered, err)
		}
		if diff := cmp.Diff(f1.String(), f3.String()); diff != "" || f1.Digest() != f3.Digest() {
			t.Fatalf("seed %d: order dependent:\n%s\n%s\n%s", seed, text, reordered, diff)
		}
		// Same value as encoding/json.
		checkAgainstStdlib(t, []byte(text), f1)
		checkEncoding(t, f1)
		checkEncoding(t, f3)
		// The same values when decoding a string (results, schemas) instead of bytes.
		for _, in := range []string{text, reordered} {
			v, err := decodeJSON(in, FreezeOptions{})
			if err != nil {
				t.Fatalf("seed %d: decodeJSON(%s): %v", seed, in, err)
			}
			if !reflect.DeepEqual(f1.tree(), v) {
				t.Fatalf("seed %d: decodeJSON(%s) = %#v, want %#v", seed, in, v, f1.tree())
			}
		}
	}
}

// checkEncoding asserts that the canonical form Freeze writes while parsing is what
// canonjson.AppendValue (used for results) writes for the decoded value.
func checkEncoding(t *testing.T, f *Frozen) {
	t.Helper()
	enc, err := canonjson.AppendValue(nil, f.tree(), 0)
	if err != nil {
		t.Fatalf("AppendValue(%s): %v", f, err)
	}
	if string(enc) != f.String() {
		t.Fatalf("canonical form differs from canonjson.AppendValue:\nfreeze %s\nencode %s", f, enc)
	}
}

// TestFreezeDeeperThanEncoder: options may allow more nesting than the encoder supports;
// such input is refused as before the parser wrote the canonical form itself.
func TestFreezeDeeperThanEncoder(t *testing.T) {
	const n = canonjson.MaxEncodeDepth + 1
	in := `{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + "}"
	_, err := Freeze([]byte(in), FreezeOptions{MaxDepth: 2 * n})
	var fe *FreezeError
	if !errors.As(err, &fe) || fe.Reason != ReasonArgumentsNotObject || !strings.Contains(fe.Msg, "nested deeper than 1000 levels") {
		t.Fatalf("got %v, want the encoder's depth refusal", err)
	}
	in = `{"a":` + strings.Repeat("[", n-2) + strings.Repeat("]", n-2) + "}"
	if _, err := Freeze([]byte(in), FreezeOptions{MaxDepth: 2 * n}); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
}

// checkAgainstStdlib asserts that a frozen value equals what encoding/json decodes from
// the same input (numbers compared after exponent normalisation). It uses
// reflect.DeepEqual: cmp.Diff's slice diffing is exponential on deeply nested arrays.
func checkAgainstStdlib(t *testing.T, in []byte, f *Frozen) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(in)))
	dec.UseNumber()
	var want any
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("encoding/json rejects %q which Freeze accepted: %v", in, err)
	}
	if got := f.Value(); !reflect.DeepEqual(normNumbers(want), got) {
		t.Fatalf("value differs from encoding/json for %q:\nstdlib %#v\nfreeze %#v", in, want, got)
	}
}

// normNumbers applies canonjson.NormalizeNumber to every json.Number of a decoded tree, in place.
func normNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		return json.Number(canonjson.NormalizeNumber(string(t)))
	case map[string]any:
		for k, e := range t {
			t[k] = normNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normNumbers(e)
		}
	}
	return v
}
