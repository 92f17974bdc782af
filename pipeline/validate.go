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
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/toolgate/toolgate/pipeline/internal/canonjson"
)

// Limits of schema handling.
const (
	// MaxSchemaBytes is the size limit of a tool's schema document.
	MaxSchemaBytes = 1 << 20
	// MaxViolations is the number of violations kept per validation; the rest are
	// counted in Validation.Omitted so status stays bounded.
	MaxViolations = 100
	// maxPointer bounds a JSON pointer quoted in a summary (bytes).
	maxPointer = 256
)

// schemaURL is the location under which a tool's schema is compiled. It only anchors
// relative references; no URL is ever fetched.
const schemaURL = "https://schemas.toolgate.dev/tool.json"

// Schema is a compiled JSON Schema (draft 2020-12 unless the document's $schema says
// otherwise). It is immutable and safe for concurrent use.
type Schema struct {
	compiled *jsonschema.Schema
	// fast accepts most valid instances without the library; nil when the root uses
	// keywords it does not model (see fastschema.go).
	fast   *fastNode
	digest string
}

// Digest returns "sha256:<hex>" of the schema document's canonical form.
func (s *Schema) Digest() string { return s.digest }

type schemaEntry struct {
	schema *Schema
	err    error
}

// SchemaError reports a tool schema that does not compile: a registration problem of the
// Tool (it is not ready), never an error of a call.
type SchemaError struct {
	// Msg explains what is wrong with the schema.
	Msg string
}

func (e *SchemaError) Error() string { return "tool schema is invalid: " + e.Msg }

// Reason returns ReasonSchemaInvalid.
func (e *SchemaError) Reason() Reason { return ReasonSchemaInvalid }

// Violation is one way an instance fails its schema.
type Violation struct {
	// Pointer is the RFC 6901 JSON pointer of the offending value ("" is the root).
	Pointer string
	// Message is a human sentence.
	Message string
}

// Validation is the outcome of validating a value against a schema.
type Validation struct {
	// Violations are the leaf errors, sorted by pointer then message, at most MaxViolations.
	Violations []Violation
	// Omitted counts violations beyond MaxViolations.
	Omitted int
}

// Valid reports whether there were no violations.
func (v Validation) Valid() bool { return len(v.Violations) == 0 }

// CompileSchema compiles a tool's schema document (JSON). Compiled schemas are cached by
// content, so calling it for every call is cheap. Remote and file references are never
// loaded. A schema that does not compile yields a *SchemaError.
func (c *Compiler) CompileSchema(doc []byte) (*Schema, error) {
	if e, ok := getBytes(c.schemas, doc); ok {
		return e.schema, e.err
	}
	s, err := compileSchema(doc)
	c.schemas.put(string(doc), schemaEntry{schema: s, err: err})
	return s, err
}

func compileSchema(doc []byte) (s *Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, &SchemaError{Msg: fmt.Sprintf("schema compiler failed: %v", r)}
		}
	}()
	frozen, err := freezeDocument(doc, FreezeOptions{MaxBytes: MaxSchemaBytes, MaxDepth: 128}, false)
	if err != nil {
		return nil, &SchemaError{Msg: err.Error()}
	}
	v := frozen.tree()
	jc := jsonschema.NewCompiler()
	jc.DefaultDraft(jsonschema.Draft2020)
	jc.UseLoader(noLoader{})
	if err := jc.AddResource(schemaURL, v); err != nil {
		return nil, &SchemaError{Msg: err.Error()}
	}
	compiled, err := jc.Compile(schemaURL)
	if err != nil {
		return nil, &SchemaError{Msg: err.Error()}
	}
	if at := refCycle(compiled); at != "" {
		return nil, &SchemaError{Msg: "reference cycle: the schema at " + at + " applies itself to the same value"}
	}
	return &Schema{compiled: compiled, fast: newFastNode(compiled), digest: frozen.Digest()}, nil
}

// noLoader refuses every URL: schemas are self-contained, and fetching files or URLs
// from the operator would be a way out of the sandbox.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("loading %s is not allowed: schemas must be self-contained", url)
}

// Validate checks the frozen arguments against the tool's parameters schema. A nil
// schema accepts everything. On violations it returns Deny with ReasonSchemaViolation;
// no policy may run after that.
func Validate(s *Schema, f *Frozen) (Decision, Validation) {
	var val Validation
	if s != nil && f != nil {
		val = s.validate(f.tree())
	}
	if val.Valid() {
		return Decision{Verdict: Allow, Reason: ReasonValid, Message: "arguments match the tool's schema"}, val
	}
	return deny(ReasonSchemaViolation, "arguments do not match the tool's schema: "+summarize(val)), val
}

// ValidateValue checks any JSON value (as returned by Frozen.Value or held in
// Result.Content) against s.
func (s *Schema) ValidateValue(v any) Validation { return s.validate(v) }

func (s *Schema) validate(v any) (val Validation) {
	defer func() {
		// The validator parses numbers with math/big, which gives up (and the library
		// then panics) on exponents beyond about 1e6; report that instead of crashing.
		if r := recover(); r != nil {
			val = Validation{Violations: []Violation{{Message: "the value holds a number too large to validate"}}}
		}
	}()
	if s.fast != nil && s.fast.valid(v) {
		return Validation{}
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return Validation{}
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return Validation{Violations: []Violation{{Message: err.Error()}}}
	}
	all := leafViolations(ve, nil)
	slices.SortFunc(all, func(a, b Violation) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	all = slices.Compact(all)
	if len(all) > MaxViolations {
		return Validation{Violations: all[:MaxViolations:MaxViolations], Omitted: len(all) - MaxViolations}
	}
	return Validation{Violations: all}
}

// leafViolations collects the errors without causes: the precise ones. Wrapper kinds
// (a $ref, allOf, "schema") carry only causes.
func leafViolations(e *jsonschema.ValidationError, out []Violation) []Violation {
	if len(e.Causes) == 0 {
		if _, wrapper := e.ErrorKind.(*kind.Schema); wrapper {
			return out
		}
		return append(out, Violation{
			Pointer: canonjson.Pointer(e.InstanceLocation),
			Message: violationMessage(e.ErrorKind),
		})
	}
	for _, c := range e.Causes {
		out = leafViolations(c, out)
	}
	return out
}

// summarize renders the first few violations as one sentence for a condition message.
func summarize(v Validation) string {
	const shown = 5
	parts := make([]string, 0, shown)
	for i, x := range v.Violations {
		if i == shown {
			break
		}
		ptr := x.Pointer
		if ptr == "" {
			ptr = "/"
		}
		// A pointer names the caller's property names, which can be long.
		ptr = boundText(ptr, maxPointer)
		parts = append(parts, fmt.Sprintf("at %s: %s", ptr, x.Message))
	}
	s := strings.Join(parts, "; ")
	if more := len(v.Violations) + v.Omitted - len(parts); more > 0 {
		s += fmt.Sprintf(" (and %d more)", more)
	}
	return s
}
