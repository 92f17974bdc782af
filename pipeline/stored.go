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
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// Limits of a stored result's fields: the ToolCall CRD's, which the API server enforces on
// every status write. A result over them would make the terminal write fail and the call
// never end; StoreResult is the one place that fits a result to them.
const (
	// MaxResultErrorBytes is status.result.error's maxLength (characters; a byte bound
	// is within it).
	MaxResultErrorBytes = 32768
	// MaxResultMetaKeys is status.result.meta's maxProperties.
	MaxResultMetaKeys = 32
)

// StoredResult is stage 8's output, computed once: the final result as it is written to
// status, its content's JSON and the digest of the whole.
type StoredResult struct {
	// Result is the result as stored: its error fitted to MaxResultErrorBytes (see
	// Bounded). Its content is the caller's tree, unchanged: what is stored of it is
	// Content.
	Result Result
	// Content is the canonical JSON of Result.Content in the form the API server stores
	// (what status.result.content is written as); nil when Result.Content is nil.
	Content []byte
	// Frozen is the canonical form of the whole Result as stored; its digest is
	// status.resultDigest.
	Frozen *Frozen
}

// StoreResult is stage 8: it fits the result to its stored fields and freezes it in the
// form the API server stores, in one encoding and one hash.
//
// The error is cut to MaxResultErrorBytes (Bounded: it says so, and meta.messageBytes
// gives the full size); content that is the same text as the error (a refusal's message)
// is cut with it. Content is never cut: an output over its limit is refused by Normalize
// (OutputTooLarge), and what a policy's Replace makes of it is stored whole or, when the
// API server refuses the object's size, replaced by the controllers with OutputTooLarge.
//
// The API server decodes the numbers of a custom resource as int64 (a literal without a
// '.' that fits) or float64 (any other) and encodes them again, so 1.0 is stored as 1,
// 1E+2 as 100, an integer beyond int64 as the nearest float64 and -0 as 0. The content is
// encoded once, with its numbers in that form (canonjson.AppendStoredValue), and the
// digest is of those bytes: the content read back from the API server freezes
// (FreezeResult) to the same digest. A number no float64 holds (1e400), a result whose
// meta has more than MaxResultMetaKeys keys, or content JSON cannot represent (a NaN,
// invalid UTF-8, an unsupported Go type) cannot be stored: that is an error, and nothing
// of the result may be written.
func StoreResult(r Result) (StoredResult, error) {
	if len(r.Meta) > MaxResultMetaKeys {
		return StoredResult{}, fmt.Errorf("the result's meta has %d keys, over the limit of %d", len(r.Meta), MaxResultMetaKeys)
	}
	r = boundError(r)
	f, contentEnd, err := freezeResult(r, true)
	if err != nil {
		return StoredResult{}, fmt.Errorf("storing result: %w", err)
	}
	out := StoredResult{Result: r, Frozen: f}
	if r.Content != nil {
		out.Content = []byte(f.String()[len(contentPrefix):contentEnd])
	}
	return out, nil
}

// Bounded cuts s to at most limit bytes (so at most limit characters, which is what a
// field's maxLength counts), at a rune boundary, ending with a note that it was cut and how
// long it was. It reports whether it cut. It is the one cut of every message the operator
// writes (result errors here, condition messages and event notes in the controllers).
func Bounded(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	note := fmt.Sprintf("… [truncated; %d bytes in full]", len(s))
	return strings.ToValidUTF8(UTF8Prefix(s, limit-len(note)), "") + note, true
}

// boundError fits a result's error to its field. A refusal's content is the same message
// and is cut with it; meta.messageBytes gives the full size. The caller's meta is not
// changed.
func boundError(r Result) Result {
	msg, cut := Bounded(r.Error, MaxResultErrorBytes)
	if !cut {
		return r
	}
	if content, ok := r.Content.(string); ok && content == r.Error {
		r.Content = msg
	}
	meta := maps.Clone(r.Meta)
	if meta == nil {
		meta = map[string]string{}
	}
	meta[MetaMessageBytes] = strconv.Itoa(len(r.Error))
	r.Error, r.Meta = msg, meta
	return r
}
