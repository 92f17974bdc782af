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
	"fmt"
	"slices"
	"sync"

	"github.com/toolgate/toolgate/pipeline/internal/canonjson"
)

// Default limits of Freeze.
const (
	// DefaultMaxArgumentBytes is the default size limit of a call's arguments (256 KiB).
	DefaultMaxArgumentBytes = 256 << 10
	// DefaultMaxDepth is the default nesting limit of objects and arrays.
	DefaultMaxDepth = 64
)

// FreezeOptions bounds what Freeze accepts. Zero fields take the defaults.
type FreezeOptions struct {
	// MaxBytes is the size limit of the raw input; default DefaultMaxArgumentBytes.
	MaxBytes int
	// MaxDepth is the nesting limit of objects and arrays; default DefaultMaxDepth.
	MaxDepth int
}

func (o FreezeOptions) withDefaults() FreezeOptions {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxArgumentBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	return o
}

// FreezeError explains why input could not be frozen.
type FreezeError struct {
	// Reason is ReasonArgumentsTooLarge or ReasonArgumentsNotObject.
	Reason Reason
	// Pointer is the JSON pointer of the offending member, when known.
	Pointer string
	// Msg is a human sentence for the operator's people; it may name the operator's limit.
	Msg string
	// Feedback is Msg without host configuration, for the model; empty when Msg holds none.
	Feedback string
}

func (e *FreezeError) Error() string { return e.Msg }

// Frozen is an immutable JSON value in canonical form with its digest. Its methods never
// return anything that aliases the internal state, so no stage can change what a later
// stage (or the tool body) sees. A Frozen is safe for concurrent use.
type Frozen struct {
	canonical string // strings are immutable: safe to share
	digest    string
	// value is the decoded tree (json.Number numbers), never handed out directly. Frozen
	// arguments get it from the parser (eager); a frozen result decodes its canonical
	// bytes on first use, under once.
	value any
	eager bool
	once  sync.Once
}

// newFrozen wraps canonical bytes. value is their decoded tree, or nil to decode the
// bytes on first use.
func newFrozen(canonical []byte, value any) *Frozen {
	return newFrozenString(string(canonical), canonjson.Digest(canonical), value)
}

func newFrozenString(canonical, digest string, value any) *Frozen {
	return &Frozen{canonical: canonical, digest: digest, value: value, eager: value != nil}
}

// tree returns the decoded tree.
func (f *Frozen) tree() any {
	if f.eager {
		return f.value
	}
	f.once.Do(func() {
		f.value, _ = decodeJSON(f.canonical, FreezeOptions{MaxBytes: len(f.canonical), MaxDepth: canonjson.MaxEncodeDepth})
	})
	return f.value
}

// Canonical returns a fresh copy of the canonical JSON bytes.
func (f *Frozen) Canonical() []byte { return []byte(f.canonical) }

// String returns the canonical JSON text.
func (f *Frozen) String() string { return f.canonical }

// Digest returns "sha256:<hex>" of the canonical bytes.
func (f *Frozen) Digest() string { return f.digest }

// Len returns the size of the canonical bytes.
func (f *Frozen) Len() int { return len(f.canonical) }

// Value returns a deep copy of the decoded value: map[string]any, []any, string,
// json.Number (the canonical literal), bool or nil. Changing it changes nothing else.
func (f *Frozen) Value() any { return deepCopy(f.tree()) }

// Freeze parses raw arguments, which must be a single JSON object, and returns their
// canonical form and digest. It fails with a *FreezeError on: input over opts.MaxBytes,
// invalid UTF-8, an escaped lone surrogate (which a decoder would silently replace),
// syntax errors, duplicate keys (after unescaping), nesting deeper than opts.MaxDepth,
// trailing data, or a top-level value that is not an object.
//
// The canonical form sorts object keys (by UTF-16 code units, as RFC 8785), drops
// insignificant whitespace and escapes only what JSON requires. Numbers keep their
// literal text, never passing through float64: 1e400, 0.1 and 18446744073709551617 stay
// exact and 1 stays distinct from 1.0. Only the exponent is normalised (1E+05 -> 1e5).
func Freeze(raw []byte, opts FreezeOptions) (*Frozen, error) {
	opts = opts.withDefaults()
	if len(raw) > opts.MaxBytes {
		// The limit is the operator's setting (--max-argument-bytes): the condition names it,
		// the model sees only the size of what it sent.
		return nil, &FreezeError{Reason: ReasonArgumentsTooLarge,
			Msg:      fmt.Sprintf("arguments are %d bytes, over the limit of %d bytes", len(raw), opts.MaxBytes),
			Feedback: fmt.Sprintf("arguments are %d bytes, over the size limit for tool calls", len(raw))}
	}
	return freezeDocument(raw, opts, true)
}

// freezeDocument parses data and freezes it; with object, anything but a JSON object is
// refused.
func freezeDocument(data []byte, opts FreezeOptions, object bool) (*Frozen, error) {
	doc, err := parseJSON(data, opts, true)
	if err != nil {
		return nil, err
	}
	if _, ok := doc.Value.(map[string]any); object && !ok {
		return nil, invalid("arguments must be a JSON object, not %s", kindOf(doc.Value))
	}
	if doc.Deepest > canonjson.MaxEncodeDepth {
		// What canonjson.AppendValue refuses, for options allowing more than it.
		return nil, invalid("value nested deeper than %d levels", canonjson.MaxEncodeDepth)
	}
	return newFrozenString(doc.Canonical, doc.Digest, doc.Value), nil
}

// parseJSON parses one JSON value of any kind under opts (defaults applied), computing
// the canonical text's digest when asked, and reports a refusal as a *FreezeError.
func parseJSON(data []byte, opts FreezeOptions, digest bool) (canonjson.Document, error) {
	opts = opts.withDefaults()
	doc, err := canonjson.Parse(data, canonjson.Options{MaxBytes: opts.MaxBytes, MaxDepth: opts.MaxDepth, Digest: digest})
	return doc, freezeError(err)
}

// encodeBuffers recycles the scratch buffers canonical bytes are encoded into: newFrozen
// copies them into an immutable string anyway, so the scratch need not be garbage.
var encodeBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuffer keeps a rare huge document from pinning its buffer in the pool.
const maxPooledBuffer = 1 << 20

func getEncodeBuffer(sizeHint int) *[]byte {
	buf := encodeBuffers.Get().(*[]byte)
	*buf = slices.Grow((*buf)[:0], sizeHint)
	return buf
}

func putEncodeBuffer(buf *[]byte) {
	if cap(*buf) <= maxPooledBuffer {
		encodeBuffers.Put(buf)
	}
}

// decodeJSON decodes exactly one JSON value of any kind under the given limits. Strings
// of the tree are substrings of raw when raw is canonical, else of its canonical form.
func decodeJSON(raw string, opts FreezeOptions) (any, error) {
	opts = opts.withDefaults()
	doc, err := canonjson.ParseString(raw, canonjson.Options{MaxBytes: opts.MaxBytes, MaxDepth: opts.MaxDepth})
	return doc.Value, freezeError(err)
}

// freezeError turns the engine's refusal into a *FreezeError: over the size limit is
// ReasonArgumentsTooLarge, anything else ReasonArgumentsNotObject.
func freezeError(err error) error {
	if err == nil {
		return nil // before e, which errors.As moves to the heap
	}
	var e *canonjson.Error
	if !errors.As(err, &e) {
		return err
	}
	reason := ReasonArgumentsNotObject
	if e.TooLarge {
		reason = ReasonArgumentsTooLarge
	}
	return &FreezeError{Reason: reason, Pointer: e.Pointer, Msg: e.Msg}
}

// invalid reports a whole-document problem (no member to point at).
func invalid(format string, args ...any) *FreezeError {
	return &FreezeError{Reason: ReasonArgumentsNotObject, Msg: fmt.Sprintf(format, args...)}
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return "null"
	}
}

// deepCopy copies a decoded JSON tree.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, e := range t {
			a[i] = deepCopy(e)
		}
		return a
	default:
		return v
	}
}
