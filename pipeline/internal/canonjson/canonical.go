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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Canonical form (shared by arguments and results), in the style of RFC 8785:
//   - objects: members sorted by key, compared as UTF-16 code units (RFC 8785 §3.2.3);
//   - no insignificant whitespace;
//   - strings: raw UTF-8, escaping only '"', '\\' and control characters (\b \f \n \r \t,
//     others as \u00xx);
//   - numbers: the literal text of the input is kept, so no value ever passes through
//     float64 (1e400, 0.1 and 2^64+1 stay exact, and 1 stays distinct from 1.0, which a
//     tool's own JSON parser may treat differently). Only the exponent is normalised,
//     which never changes the value or its integer/float nature: "E" becomes "e", a "+"
//     sign is dropped and leading zeros of the exponent are removed (1E+05 -> 1e5).
//     This differs from RFC 8785, which re-serialises numbers through IEEE 754.
//   - numbers of a stored result (AppendStoredValue) are the exception: they are written
//     as the Kubernetes API server stores a custom resource's numbers (int64 or float64,
//     storedNumber), the one form that survives being written to and read back from it.

// Digest returns "sha256:<hex>" of b (canonical bytes), built in one allocation.
func Digest(b []byte) string {
	const prefix = "sha256:"
	sum := sha256.Sum256(b)
	var out [len(prefix) + 2*sha256.Size]byte
	copy(out[:], prefix)
	hex.Encode(out[len(prefix):], sum[:])
	return string(out[:])
}

// text is what the parser and the scanning helpers read: a string, or the caller's bytes.
type text interface{ ~string | ~[]byte }

// appendNormNumber appends the valid JSON number s with the exponent normalisation
// described above.
func appendNormNumber[T text](dst []byte, s T) []byte {
	i := 0
	for i < len(s) && s[i] != 'e' && s[i] != 'E' {
		i++
	}
	if i == len(s) {
		return append(dst, s...)
	}
	dst = append(dst, s[:i]...)
	dst = append(dst, 'e')
	exp := s[i+1:]
	neg := false
	switch {
	case len(exp) > 0 && exp[0] == '+':
		exp = exp[1:]
	case len(exp) > 0 && exp[0] == '-':
		neg, exp = true, exp[1:]
	}
	for len(exp) > 1 && exp[0] == '0' {
		exp = exp[1:]
	}
	if neg && (len(exp) != 1 || exp[0] != '0') {
		dst = append(dst, '-')
	}
	return append(dst, exp...)
}

// NormalizeNumber applies the exponent normalisation described above to a valid JSON
// number literal, giving its canonical text (s itself when it already is).
func NormalizeNumber(s string) string {
	i := 0
	for i < len(s) && s[i] != 'e' && s[i] != 'E' {
		i++
	}
	if i == len(s) {
		return s
	}
	mant, exp := s[:i], s[i+1:]
	neg := false
	switch {
	case exp != "" && exp[0] == '+':
		exp = exp[1:]
	case exp != "" && exp[0] == '-':
		neg, exp = true, exp[1:]
	}
	for len(exp) > 1 && exp[0] == '0' {
		exp = exp[1:]
	}
	if neg && exp != "0" {
		exp = "-" + exp
	}
	out := mant + "e" + exp
	if out == s {
		return s
	}
	return out
}

// compareKeys orders object keys by UTF-16 code units, as RFC 8785 requires. UTF-8 byte
// order equals code point order, which differs from UTF-16 order only between
// supplementary characters and U+E000..U+FFFF.
// The keys may be strings or bytes, in any combination.
func compareKeys[A, B text](a A, b B) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
		return int(a[i]) - int(b[i])
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := decodeRune(a[i:])
	rb, _ := decodeRune(b[i:])
	ua, ub := utf16Lead(ra), utf16Lead(rb)
	if ua != ub {
		return ua - ub
	}
	return int(ra) - int(rb)
}

// decodeRune is utf8.DecodeRuneInString for strings or bytes; the conversion of at most
// four bytes does not allocate.
func decodeRune[T text](s T) (rune, int) {
	return utf8.DecodeRuneInString(string(s[:min(len(s), utf8.UTFMax)]))
}

// sortKeys sorts object keys in canonical order.
func sortKeys(keys []string) { slices.SortFunc(keys, compareKeys[string, string]) }

// utf16Lead returns the first UTF-16 code unit of r.
func utf16Lead(r rune) int {
	if r >= 0x10000 {
		return 0xD800 + int((r-0x10000)>>10)
	}
	return int(r)
}

// AppendValue appends the canonical encoding of a JSON value tree to dst. The tree
// may hold map[string]any, []any, string, json.Number, bool, nil, and (for values built
// in Go) float64, int, int64 and map[string]string. depth is v's nesting level in the
// document being written (0 for the root); deeper than MaxEncodeDepth is an error, as
// are a NaN or infinity, an invalid json.Number or string, and any other type.
func AppendValue(dst []byte, v any, depth int) ([]byte, error) {
	return appendValue(dst, v, depth, false)
}

// AppendStoredValue is AppendValue with every number in the form the Kubernetes API
// server stores it in a custom resource (StoredNumber), so that the bytes, read back from
// the API server and encoded again by AppendValue, are the same bytes. A number no
// float64 holds (1e400) is an error: the API server refuses it.
func AppendStoredValue(dst []byte, v any, depth int) ([]byte, error) {
	return appendValue(dst, v, depth, true)
}

func appendValue(dst []byte, v any, depth int, stored bool) ([]byte, error) {
	if depth > MaxEncodeDepth {
		return dst, fmt.Errorf("value nested deeper than %d levels", MaxEncodeDepth)
	}
	switch t := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, t), nil
	case string:
		return AppendString(dst, t)
	case json.Number:
		if !isJSONNumber(string(t)) {
			return dst, fmt.Errorf("invalid JSON number %q", string(t))
		}
		if stored {
			s, err := storedNumber(string(t))
			if err != nil {
				return dst, err
			}
			return appendNormNumber(dst, s), nil
		}
		return append(dst, NormalizeNumber(string(t))...), nil
	case int:
		return strconv.AppendInt(dst, int64(t), 10), nil
	case int64:
		return strconv.AppendInt(dst, t, 10), nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return dst, fmt.Errorf("number %v is not representable in JSON", t)
		}
		if stored {
			return appendNormNumber(dst, storedFloat(t)), nil
		}
		return append(dst, NormalizeNumber(strconv.FormatFloat(t, 'g', -1, 64))...), nil
	case []any:
		return encodeArray(dst, t, depth, stored)
	case map[string]any:
		return encodeObject(dst, t, depth, stored)
	case map[string]string:
		return encodeStringMap(dst, t)
	default:
		return dst, fmt.Errorf("unsupported value of type %T", v)
	}
}

// storedNumber is the text of a valid JSON number as the API server stores it: it decodes
// a custom resource's numbers as int64 (a literal without a '.' that fits one) or float64
// (any other) and encodes them again with encoding/json, so 1.0 is stored as 1, 1E+2 as
// 100, an integer beyond int64 as the nearest float64 and -0 as 0.
func storedNumber(s string) (string, error) {
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

// MaxEncodeDepth bounds recursion when encoding trees built outside the decoder; the
// pipeline refuses documents nested deeper, whatever their parse limits.
const MaxEncodeDepth = 1000

func encodeArray(dst []byte, a []any, depth int, stored bool) ([]byte, error) {
	dst = append(dst, '[')
	var err error
	for i, e := range a {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendValue(dst, e, depth+1, stored); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// smallObject is the member count up to which the sorted keys stay on the stack.
const smallObject = 16

func encodeObject(dst []byte, m map[string]any, depth int, stored bool) ([]byte, error) {
	var small [smallObject]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	sortKeys(keys)
	dst = append(dst, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = AppendString(dst, k); err != nil {
			return dst, err
		}
		dst = append(dst, ':')
		if dst, err = appendValue(dst, m[k], depth+1, stored); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

func encodeStringMap(dst []byte, m map[string]string) ([]byte, error) {
	var small [smallObject]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	sortKeys(keys)
	dst = append(dst, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = AppendString(dst, k); err != nil {
			return dst, err
		}
		dst = append(dst, ':')
		if dst, err = AppendString(dst, m[k]); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

const hexDigits = "0123456789abcdef"

// plainByte[c] is true for the bytes a JSON string holds as they are: not '"', '\\' or a
// control character. One table load per byte is cheaper than three comparisons in the
// scanning loops of the parser and the encoder, which see every byte of every string.
var plainByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

// skipPlain returns the index of the first byte of s at or after i that is not plain (or
// len(s)). It tests eight bytes at a time: in the word x, a byte is special when it is
// below 0x20 or equal to '"' or '\\' (a zero byte of x^'"' or x^'\\'); the classic
// "has a byte below n" test, (x - n*lsb) &^ x & msb, is non-zero exactly when some byte
// is (bytes from 0x80 up, as UTF-8 uses them, never are). The strings of tool arguments
// are long runs of plain bytes, which this scans several times faster than the table.
func skipPlain[T text](s T, i int) int {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		t := s[i : i+8]
		x := uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
			uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
		q, b := x^(lsb*'"'), x^(lsb*'\\')
		if ((x-lsb*0x20)|(q-lsb)|(b-lsb))&^x&msb != 0 {
			break
		}
	}
	for i < len(s) && plainByte[s[i]] {
		i++
	}
	return i
}

// AppendString appends s as a canonical JSON string; it fails when s is not valid UTF-8.
func AppendString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return dst, fmt.Errorf("string is not valid UTF-8")
	}
	return appendValidString(dst, s), nil
}

// appendValidString is AppendString for a string known to be valid UTF-8.
func appendValidString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := skipPlain(s, 0); i < len(s); i = skipPlain(s, i+1) {
		c := s[i]
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// isJSONNumber reports whether s is a number literal per RFC 8259.
func isJSONNumber[T text](s T) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := skipDigits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

func skipDigits[T text](s T, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
