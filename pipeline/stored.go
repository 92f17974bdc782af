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
	"maps"
	"math"
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
	// Bounded), its content's numbers in the form the API server keeps.
	Result Result
	// Content is the canonical JSON of Result.Content (what status.result.content is
	// written as); nil when Result.Content is nil.
	Content []byte
	// Frozen is the canonical form of the whole Result (FreezeResult); its digest is
	// status.resultDigest.
	Frozen *Frozen
}

// StoreResult is stage 8: it fits the result to its stored fields, brings its content to
// the form the API server stores, and freezes it, in one encoding.
//
// The error is cut to MaxResultErrorBytes (Bounded: it says so, and meta.messageBytes
// gives the full size); content that is the same text as the error (a refusal's message)
// is cut with it. Content is never cut: an output over its limit is refused by Normalize
// (OutputTooLarge), and what a policy's Replace makes of it is stored whole or, when the
// API server refuses the object's size, replaced by the controllers with OutputTooLarge.
//
// The API server decodes the numbers of a custom resource as int64 (a literal without a
// '.' that fits) or float64 (any other) and encodes them again, so 1.0 is stored as 1,
// 1E+2 as 100, an integer beyond int64 as the nearest float64 and -0 as 0. The digest is
// made of that form, or the stored result would not match it. A number no float64 holds
// (1e400), a result whose meta has more than MaxResultMetaKeys keys, or content JSON
// cannot represent (a NaN, invalid UTF-8, an unsupported Go type) cannot be stored: that
// is an error, and nothing of the result may be written.
func StoreResult(r Result) (StoredResult, error) {
	if len(r.Meta) > MaxResultMetaKeys {
		return StoredResult{}, fmt.Errorf("the result's meta has %d keys, over the limit of %d", len(r.Meta), MaxResultMetaKeys)
	}
	r = boundError(r)
	content, _, err := storedValue(r.Content, 0)
	if err != nil {
		return StoredResult{}, fmt.Errorf("storing result: %w", err)
	}
	r.Content = content
	f, err := FreezeResult(r)
	if err != nil {
		return StoredResult{}, err
	}
	out := StoredResult{Result: r, Frozen: f}
	if r.Content != nil {
		if out.Content, err = contentOf(f, r); err != nil {
			return StoredResult{}, err
		}
	}
	return out, nil
}

// contentPrefix is how the canonical form of a Result begins: content is its first member.
const contentPrefix = `{"content":`

// contentOf cuts the content's canonical JSON out of f, the canonical form of r: it is
// what lies between contentPrefix and the members after it, which r without its content
// encodes alike (a few small fields: no second encoding of the content).
func contentOf(f *Frozen, r Result) ([]byte, error) {
	r.Content = nil
	rest, err := FreezeResult(r)
	if err != nil {
		return nil, err
	}
	tail, _ := strings.CutPrefix(rest.String(), contentPrefix+"null")
	whole := f.String()
	if !strings.HasPrefix(whole, contentPrefix) || !strings.HasSuffix(whole, tail) || len(whole) < len(contentPrefix)+len(tail) {
		return nil, errors.New("storing result: its canonical form does not begin with its content")
	}
	return []byte(whole[len(contentPrefix) : len(whole)-len(tail)]), nil
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

// maxStoredDepth bounds the walk of storedValue (the encoder refuses deeper trees anyway).
const maxStoredDepth = 1000

// storedValue is v with every number in the form the API server stores it; changed says
// whether any was rewritten. Containers are copied only on the way to a rewritten number,
// so a tree the API server keeps as it is costs nothing.
func storedValue(v any, depth int) (any, bool, error) {
	if depth > maxStoredDepth {
		return nil, false, fmt.Errorf("value nested deeper than %d levels", maxStoredDepth)
	}
	switch t := v.(type) {
	case json.Number:
		s, err := storedNumber(string(t))
		if err != nil || s == string(t) {
			return v, false, err
		}
		return json.Number(s), true, nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, false, fmt.Errorf("number %v is not representable in JSON", t)
		}
		return json.Number(storedFloat(t)), true, nil
	case map[string]any:
		var out map[string]any
		for k, e := range t {
			s, changed, err := storedValue(e, depth+1)
			if err != nil {
				return nil, false, err
			}
			if changed {
				if out == nil {
					out = maps.Clone(t)
				}
				out[k] = s
			}
		}
		if out == nil {
			return v, false, nil
		}
		return out, true, nil
	case []any:
		var out []any
		for i, e := range t {
			s, changed, err := storedValue(e, depth+1)
			if err != nil {
				return nil, false, err
			}
			if changed {
				if out == nil {
					out = append([]any(nil), t...)
				}
				out[i] = s
			}
		}
		if out == nil {
			return v, false, nil
		}
		return out, true, nil
	}
	return v, false, nil // strings, booleans, null, int and int64 are stored as they are
}

// storedNumber is the text of a JSON number as the API server stores it: an int64 when the
// literal has no '.' and fits one, else the float64 it rounds to, printed as encoding/json
// prints it (the API server's encoder).
func storedNumber(s string) (string, error) {
	if !validNumber(s) {
		return "", fmt.Errorf("invalid JSON number %q", s)
	}
	if !strings.Contains(s, ".") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			if i == 0 {
				return "0", nil // -0 is stored as 0
			}
			return s, nil // valid JSON integer text is already the int64's decimal form
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "", fmt.Errorf("number %s cannot be stored: no float64 holds it", s)
	}
	return storedFloat(f), nil
}

// storedFloat prints f as encoding/json does (exponent form below 1e-6 and from 1e21), as
// read back: an integral float printed without a '.' is an int64 to the next reader, so
// -0 is 0.
func storedFloat(f float64) string {
	if f == 0 {
		return "0"
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	return strconv.FormatFloat(f, format, -1, 64)
}

// validNumber reports whether s is a JSON number (RFC 8259 grammar): strconv accepts more
// (hexadecimal, Inf, leading zeros), which must not be turned into numbers here.
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digitsFrom(s, i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		if j := digitsFrom(s, i+1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if j := digitsFrom(s, i); j > i {
			i = j
		} else {
			return false
		}
	}
	return i == len(s)
}

func digitsFrom(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
