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

// Package canonjson is the pipeline's strict JSON engine: a parser that refuses whatever
// would make a document's canonical bytes ambiguous, and the canonical encoder.
//
// Parse and ParseString read one RFC 8259 document under size and depth limits and give
// its decoded tree (map[string]any, []any, string, json.Number, bool, nil), its canonical
// text and, on request, that text's digest, all in one pass over the input. Beyond RFC
// 8259 they refuse duplicate keys (compared after unescaping), escaped lone UTF-16
// surrogates (a decoder would turn them into U+FFFD) and invalid UTF-8. AppendValue and
// AppendString write the same canonical form for trees built in Go (AppendStoredValue with
// numbers in the form the Kubernetes API server stores them), Digest names
// canonical bytes, NormalizeNumber normalises a number literal as the canonical form
// does, and Pointer formats an RFC 6901 pointer. The canonical form is described in
// canonical.go; it follows RFC 8785 except that numbers keep their literal text.
//
// The package has no defaults and no notion of arguments or results: the pipeline's
// Freeze, FreezeResult and Normalize choose the limits and what a document may be.
package canonjson

import "strings"

// Options bounds what Parse and ParseString accept. The package has no defaults: a zero
// limit refuses every non-empty input (MaxBytes) or every object and array (MaxDepth).
type Options struct {
	// MaxBytes is the size limit of the input in bytes.
	MaxBytes int
	// MaxDepth is the nesting limit of objects and arrays.
	MaxDepth int
	// Digest asks for Document.Digest.
	Digest bool
}

// Document is a parsed JSON document.
type Document struct {
	// Value is the decoded tree. Its keys, numbers and strings without escapes are
	// substrings of Canonical (which costs no allocation each), so any retained part of
	// the tree keeps Canonical alive.
	Value any
	// Canonical is the document's canonical text.
	Canonical string
	// Digest is Digest(Canonical) when Options.Digest was set, else empty.
	Digest string
	// Deepest is the nesting level of the deepest value: 0 for the root, 1 for a member
	// or item of the root, and so on.
	Deepest int
}

// Error explains why a document was refused; it is the only error Parse and ParseString
// return.
type Error struct {
	// TooLarge is set when the input is over Options.MaxBytes; every other refusal is a
	// malformed or ambiguous document.
	TooLarge bool
	// Pointer is the RFC 6901 pointer of the member being parsed, when there is one.
	Pointer string
	// Msg is a human sentence (with the pointer, when there is one).
	Msg string
}

func (e *Error) Error() string { return e.Msg }

// Parse parses exactly one JSON value of any kind. The Document does not alias data.
func Parse(data []byte, opts Options) (Document, error) {
	return parse(data, "", opts)
}

// ParseString is Parse for a string. When s is already canonical, Document.Canonical is
// s itself rather than a copy.
func ParseString(s string, opts Options) (Document, error) {
	return parse(s, s, opts)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// Pointer formats reference tokens (object keys and array indexes) as an RFC 6901
// pointer: "" for none, else "/" before each token, with "~" and "/" escaped.
func Pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}
