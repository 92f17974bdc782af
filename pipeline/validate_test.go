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
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const grepSchema = `{
  "type": "object",
  "required": ["pattern"],
  "additionalProperties": false,
  "properties": {
    "pattern": {"type": "string", "minLength": 1},
    "path": {"type": "string"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
    "big": {"type": "number", "maximum": 1e300},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}
  }
}`

func TestValidate(t *testing.T) {
	c := newTestCompiler(t)
	s := mustSchema(t, c, grepSchema)
	tests := []struct {
		name string
		args string
		want []Violation
	}{
		{"valid", `{"pattern":"x","limit":10,"tags":["a"]}`, nil},
		{"missing required", `{"path":"/"}`, []Violation{{Pointer: "", Message: "missing property 'pattern'"}}},
		{"all leaves listed in pointer order", `{"pattern":"","limit":0,"tags":[1,"b",true],"extra":1}`, []Violation{
			{Pointer: "", Message: "additional properties 'extra' not allowed"},
			{Pointer: "/limit", Message: "minimum: got 0, want 1"},
			{Pointer: "/pattern", Message: "minLength: got 0, want 1"},
			{Pointer: "/tags", Message: "maxItems: got 3, want 2"},
			{Pointer: "/tags/0", Message: "got number, want string"},
			{Pointer: "/tags/2", Message: "got boolean, want string"},
		}},
		{"exact big numbers", `{"pattern":"x","big":1e400}`, []Violation{{Pointer: "/big", Message: "maximum: got 1e400, want 1e300"}}},
		{"no digit grouping", `{"pattern":"x","limit":5000}`, []Violation{{Pointer: "/limit", Message: "maximum: got 5000, want 1000"}}},
		{"integer with fraction", `{"pattern":"x","limit":1.5}`, []Violation{{Pointer: "/limit", Message: "got number, want integer"}}},
		{"number too large to validate", `{"pattern":"x","big":1e9999999}`, []Violation{{Message: "the value holds a number too large to validate"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, val := Validate(s, mustFreeze(t, tc.args))
			if diff := cmp.Diff(tc.want, val.Violations); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			wantVerdict := Allow
			if len(tc.want) > 0 {
				wantVerdict = Deny
			}
			if d.Verdict != wantVerdict || (wantVerdict == Deny && d.Reason != ReasonSchemaViolation) {
				t.Errorf("decision = %+v, want %s", d, wantVerdict)
			}
		})
	}
}

func TestValidateNilSchemaAcceptsAll(t *testing.T) {
	d, val := Validate(nil, mustFreeze(t, `{"anything":[1,2]}`))
	if d.Verdict != Allow || !val.Valid() {
		t.Fatalf("got %+v %+v", d, val)
	}
}

func TestValidateCapsViolations(t *testing.T) {
	c := newTestCompiler(t)
	s := mustSchema(t, c, `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string"}}}}`)
	items := strings.TrimSuffix(strings.Repeat("1,", MaxViolations+7), ",")
	d, val := Validate(s, mustFreeze(t, `{"l":[`+items+`]}`))
	if len(val.Violations) != MaxViolations || val.Omitted != 7 {
		t.Fatalf("got %d violations, %d omitted", len(val.Violations), val.Omitted)
	}
	if !strings.Contains(d.Message, fmt.Sprintf("(and %d more)", MaxViolations+7-5)) {
		t.Errorf("message %q does not count the rest", d.Message)
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	c := newTestCompiler(t)
	tests := []struct {
		name   string
		schema string
		msg    string
	}{
		{"not JSON", `{"type":`, "unexpected end"},
		{"duplicate key", `{"type":"object","type":"string"}`, "duplicate key"},
		{"bad keyword value", `{"type":"objekt"}`, "not valid against metaschema"},
		{"bad regex", `{"pattern":"("}`, "pattern"},
		{"remote ref not loaded", `{"$ref":"https://example.com/s.json"}`, "not allowed"},
		{"file ref not loaded", `{"$ref":"file:///etc/passwd"}`, "not allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.CompileSchema([]byte(tc.schema))
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("error = %v (%T), want *SchemaError", err, err)
			}
			if se.Reason() != ReasonSchemaInvalid || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q: want reason SchemaInvalid and text %q", err, tc.msg)
			}
		})
	}
}

func TestCompileSchemaCache(t *testing.T) {
	c, err := NewCompiler(CompilerOptions{CacheSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	a1 := mustSchema(t, c, grepSchema)
	a2 := mustSchema(t, c, grepSchema)
	if a1 != a2 {
		t.Errorf("same document compiled twice")
	}
	mustSchema(t, c, `{"type":"object"}`)
	mustSchema(t, c, `{"type":"string"}`)
	if n := c.schemas.len(); n != 2 {
		t.Errorf("cache holds %d schemas, want bound 2", n)
	}
	if a3 := mustSchema(t, c, grepSchema); a3 == a1 {
		t.Errorf("evicted schema still cached")
	} else if a3.Digest() != a1.Digest() {
		t.Errorf("digest not stable: %s vs %s", a3.Digest(), a1.Digest())
	}
	// The digest is of the canonical document: formatting does not matter.
	if d := mustSchema(t, c, `{ "type" : "object" }`).Digest(); d != mustSchema(t, c, `{"type":"object"}`).Digest() {
		t.Errorf("digest depends on formatting")
	}
}

func TestCompileSchemaDraft(t *testing.T) {
	c := newTestCompiler(t)
	// prefixItems exists only from draft 2020-12, the default.
	s := mustSchema(t, c, `{"type":"object","properties":{"p":{"prefixItems":[{"type":"string"}]}}}`)
	if _, val := Validate(s, mustFreeze(t, `{"p":[1]}`)); val.Valid() {
		t.Errorf("draft 2020-12 keyword prefixItems ignored")
	}
	// A document may still choose draft-07, where prefixItems is not a keyword.
	s7 := mustSchema(t, c, `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{"p":{"prefixItems":[{"type":"string"}]}}}`)
	if _, val := Validate(s7, mustFreeze(t, `{"p":[1]}`)); !val.Valid() {
		t.Errorf("draft-07 schema applied prefixItems: %v", val)
	}
}

// A violation quotes the caller's values; however large they are, the message stays small
// and says how large the value was.
func TestValidateBoundsMessagesOfLargeValues(t *testing.T) {
	c := newTestCompiler(t)
	s := mustSchema(t, c, `{"type":"object","additionalProperties":false,"properties":{
		"p":{"type":"string","pattern":"^[a-z]*$"},
		"o":{"type":"object","additionalProperties":{"type":"integer"}}}}`)
	big := strings.Repeat("A", 100<<10)
	longKey := strings.Repeat("k", 50<<10)
	extra := make([]string, 0, 40)
	for i := range 40 {
		extra = append(extra, fmt.Sprintf(`"%s%d":1`, strings.Repeat("x", 2<<10), i))
	}
	tests := []struct {
		name, args, want string
	}{
		{"pattern", `{"p":"` + big + `"}`, "does not match pattern '^[a-z]*$'"},
		{"long pointer", `{"o":{"` + longKey + `":"s"}}`, "… (truncated): got string, want integer"},
		{"additional properties", `{` + strings.Join(extra, ",") + `}`, "(and 35 more) not allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, val := Validate(s, mustFreeze(t, tc.args))
			if len(val.Violations) == 0 {
				t.Fatal("no violation")
			}
			for _, v := range val.Violations {
				if len(v.Message) > maxViolationMessage {
					t.Errorf("violation message of %d bytes", len(v.Message))
				}
			}
			if len(d.Message) > 8<<10 {
				t.Errorf("decision message of %d bytes", len(d.Message))
			}
			if !strings.Contains(d.Message, tc.want) {
				t.Errorf("message %q does not contain %q", d.Message, tc.want)
			}
			if tc.name == "pattern" && !strings.Contains(d.Message, fmt.Sprintf("(%d bytes)", len(big))) {
				t.Errorf("message %q does not give the value's size", d.Message)
			}
		})
	}
}

func TestQuoteValue(t *testing.T) {
	cases := []struct{ in, want string }{
		{"short", "'short'"},
		{`it's "x"`, `'it\'s "x"'`},
		{strings.Repeat("é", 40), "'" + strings.Repeat("é", 32) + "'… (80 bytes)"},
	}
	for _, tc := range cases {
		if got := quoteValue(tc.in); got != tc.want {
			t.Errorf("quoteValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
