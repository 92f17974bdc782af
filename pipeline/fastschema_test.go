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

import "testing"

// fastSchemas exercise every keyword the fast path models, plus some it leaves to the
// library, in several drafts.
var fastSchemas = []string{
	benchSchema,
	grepSchema,
	`{}`,
	`true`,
	`false`,
	`{"type": ["string", "null"], "minLength": 2, "maxLength": 3}`,
	`{"type": "integer", "minimum": -5, "exclusiveMaximum": 10}`,
	`{"type": "number", "exclusiveMinimum": 0, "maximum": 0.5}`,
	`{"type": "integer", "maximum": 18446744073709551616}`,
	`{"enum": ["a", "b", null, true, 1, [1], {"a": 1}]}`,
	`{"const": "x"}`,
	`{"const": null}`,
	`{"const": 1}`,
	`{"type": "string", "pattern": "^a+$"}`,
	`{"type": "string", "format": "email"}`,
	`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "string", "format": "email"}`,
	`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": {"type": "integer"}}`,
	`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": [{"type": "integer"}], "additionalItems": false}`,
	`{"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "maximum": 3, "exclusiveMaximum": true}`,
	`{"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2}`,
	`{"type": "array", "prefixItems": [{"type": "string"}], "items": false}`,
	`{"type": "array", "uniqueItems": true}`,
	`{"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {"type": "string"}}`,
	`{"type": "object", "properties": {"a": false}}`,
	`{"type": "object", "properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}}`,
	`{"type": "object", "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": false}`,
	`{"anyOf": [{"type": "string"}, {"type": "integer"}]}`,
	`{"type": "object", "required": ["a"], "properties": {"a": {"type": "object", "required": ["b"], "additionalProperties": false, "properties": {"b": {"type": "boolean"}}}}}`,
	`{"title": "t", "description": "d", "default": 1, "examples": [1], "$comment": "c", "readOnly": true, "deprecated": true, "type": "integer"}`,
	`{"type": "integer", "multipleOf": 2}`,
}

var fastInstances = []string{
	`null`, `true`, `false`, `0`, `-0`, `1`, `-5`, `-6`, `9`, `10`, `3`, `2`, `0.5`, `1.0`, `1e2`, `1e400`,
	`18446744073709551615`, `18446744073709551617`, `123456789012345678`, `-123456789012345678`,
	`""`, `"a"`, `"ab"`, `"abc"`, `"abcd"`, `"ééé"`, `"éééé"`, `"aaa"`, `"x"`, `"a@b.c"`, `"not an email"`,
	`[]`, `[1]`, `[1, 2]`, `["a"]`, `["a", "b", "c"]`, `[1, 1]`, `[1.5]`, `["a", 1]`,
	`{}`, `{"a": 1}`, `{"a": "x"}`, `{"a": {"b": true}}`, `{"a": {"b": 1}}`, `{"a": {"b": true, "c": 1}}`,
	`{"x1": 1, "x2": 2}`, `{"x1": "s"}`, `{"a": "x", "b": "y", "c": "z"}`,
	`{"path": "/w", "pattern": "p", "limit": 500, "include": ["*.go"], "files": [{"name": "n", "size": 1}]}`,
	`{"path": "/w", "pattern": "p", "limit": 0}`, `{"path": "/w", "pattern": "", "limit": 5}`,
	`{"path": "/w", "pattern": "p", "files": [{"size": -1}]}`, `{"pattern": "x", "limit": 10, "tags": ["a"]}`,
}

// TestFastSchemaNeverAcceptsInvalid checks, over schemas × instances, that whatever the
// fast path accepts the library accepts too, and that the fast path does answer for the
// common shapes (else it would be dead code).
func TestFastSchemaNeverAcceptsInvalid(t *testing.T) {
	c := newTestCompiler(t)
	accepted := 0
	for _, sd := range fastSchemas {
		s := mustSchema(t, c, sd)
		for _, in := range fastInstances {
			v, err := decodeJSON(in, FreezeOptions{})
			if err != nil {
				t.Fatalf("decode %s: %v", in, err)
			}
			if s.fast == nil || !s.fast.valid(v) {
				continue
			}
			accepted++
			if err := s.compiled.Validate(v); err != nil {
				t.Errorf("schema %s: the fast path accepts %s, the library rejects it: %v", sd, in, err)
			}
		}
	}
	if accepted < 100 {
		t.Errorf("the fast path accepted only %d instances", accepted)
	}
}

func TestFastSchemaCoversBenchmark(t *testing.T) {
	c := newTestCompiler(t)
	for _, sd := range []string{benchSchema, grepSchema} {
		if s := mustSchema(t, c, sd); s.fast == nil {
			t.Errorf("no fast path for %s", sd)
		}
	}
	s := mustSchema(t, c, benchSchema)
	for _, dense := range []bool{false, true} {
		f := mustFreeze(t, string(makeArgs(1<<10, dense)))
		if !s.fast.valid(f.tree()) {
			t.Errorf("the fast path does not accept the benchmark's arguments (dense %v)", dense)
		}
	}
	// Keywords it does not model leave the instance to the library.
	for _, sd := range []string{
		`{"anyOf": [{"type": "string"}]}`,
		`{"$ref": "#/$defs/a", "$defs": {"a": {}}}`,
		`{"type": "array", "uniqueItems": true}`,
	} {
		if s := mustSchema(t, c, sd); s.fast != nil {
			t.Errorf("fast path built for %s", sd)
		}
	}
}
