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
	"math/big"
	"reflect"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Fast acceptance of valid instances.
//
// jsonschema's validator allocates for every value it visits (locations, scopes, a
// math/big parse of every number through fmt), which made it the largest stage of a
// call. Most tool schemas use a handful of keywords (type, properties, required,
// additionalProperties, items, enum, lengths, integer bounds), and most calls are valid.
// fastNode mirrors those keywords of the *compiled* schema, so drafts, defaults and
// keyword semantics are the library's, and answers one question without allocating:
// "is this instance certainly valid?". Anything it is not sure of (a keyword it does not
// model, a number it would have to parse, a failing check) answers "don't know", and the
// library validates as before. So the fast path only ever skips the library for
// instances the library accepts, and every violation is still the library's;
// FuzzValidate checks that the fast path never accepts what the library rejects.

// JSON types of fastNode.types, one bit each.
const (
	ftNull uint8 = 1 << iota
	ftBoolean
	ftNumber
	ftInteger
	ftString
	ftArray
	ftObject
)

var typeBits = map[string]uint8{
	"null": ftNull, "boolean": ftBoolean, "number": ftNumber, "integer": ftInteger,
	"string": ftString, "array": ftArray, "object": ftObject,
}

// fastNode is one compiled (sub)schema as the fast path sees it. Limits are -1 when
// absent.
type fastNode struct {
	// opaque: the schema uses a keyword the fast path does not model; an instance
	// reaching it is left to the library.
	opaque bool
	// never: the false schema; no instance is valid.
	never bool

	types    uint8 // 0: any type
	enum     []any
	hasEnum  bool
	constant any
	hasConst bool
	format   *jsonschema.Format

	minProps, maxProps int
	required           []string
	props              map[string]*fastNode
	additional         *fastNode // nil: any additional property is allowed

	minItems, maxItems int
	items              *fastNode // nil: any item

	minLen, maxLen int
	pattern        jsonschema.Regexp

	// Numeric bounds, all integers that fit int64 (else numOpaque).
	hasBounds                  bool
	numOpaque                  bool
	min, max, exclMin, exclMax int64
	hasMin, hasMax             bool
	hasExclMin, hasExclMax     bool
}

// fastFields are the exported fields of jsonschema.Schema the fast path models, or that
// never affect validation (annotations, identifiers). A schema with any other field set
// is opaque: this way a keyword added by a later version of the library is left to the
// library instead of being silently ignored.
var fastFields = map[string]bool{
	"DraftVersion": true, "Location": true, "ID": true,
	"Bool": true, "Types": true, "Enum": true, "Const": true, "Format": true,
	"MaxProperties": true, "MinProperties": true, "Required": true, "Properties": true,
	"AdditionalProperties": true, "MinItems": true, "MaxItems": true, "Items": true, "Items2020": true,
	"MinLength": true, "MaxLength": true, "Pattern": true,
	"Maximum": true, "Minimum": true, "ExclusiveMaximum": true, "ExclusiveMinimum": true,
	"Title": true, "Description": true, "Default": true, "Comment": true,
	"ReadOnly": true, "WriteOnly": true, "Examples": true, "Deprecated": true,
}

// newFastNode builds the fast view of a compiled schema; nil when the root itself is
// opaque (no fast path at all).
func newFastNode(s *jsonschema.Schema) *fastNode {
	n := buildFastNode(s, map[*jsonschema.Schema]*fastNode{})
	if n.opaque {
		return nil
	}
	return n
}

func buildFastNode(s *jsonschema.Schema, seen map[*jsonschema.Schema]*fastNode) *fastNode {
	if n, ok := seen[s]; ok {
		return n
	}
	n := &fastNode{minProps: -1, maxProps: -1, minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
	seen[s] = n
	if s == nil || !onlyFastFields(s) {
		n.opaque = true
		return n
	}
	if s.Bool != nil {
		n.never = !*s.Bool
		return n
	}
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			n.types |= typeBits[t]
		}
	}
	if s.Enum != nil {
		n.enum, n.hasEnum = s.Enum.Values, true
	}
	if s.Const != nil {
		n.constant, n.hasConst = *s.Const, true
	}
	n.format = s.Format
	n.minProps, n.maxProps = intOr(s.MinProperties), intOr(s.MaxProperties)
	n.required = s.Required
	if len(s.Properties) > 0 {
		n.props = make(map[string]*fastNode, len(s.Properties))
		for name, ps := range s.Properties {
			n.props[name] = buildFastNode(ps, seen)
		}
	}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		if !a {
			n.additional = &fastNode{never: true}
		}
	case *jsonschema.Schema:
		n.additional = buildFastNode(a, seen)
	default:
		n.opaque = true
	}
	n.minItems, n.maxItems = intOr(s.MinItems), intOr(s.MaxItems)
	switch {
	case s.Items2020 != nil && s.Items == nil && s.DraftVersion >= 2020:
		n.items = buildFastNode(s.Items2020, seen)
	case s.Items2020 == nil && s.Items != nil && s.DraftVersion < 2020:
		// Before 2020-12, items is one schema for every item or a tuple; only the former
		// is modelled.
		if is, ok := s.Items.(*jsonschema.Schema); ok {
			n.items = buildFastNode(is, seen)
		} else {
			n.opaque = true
		}
	case s.Items2020 != nil || s.Items != nil:
		n.opaque = true
	}
	n.minLen, n.maxLen = intOr(s.MinLength), intOr(s.MaxLength)
	n.pattern = s.Pattern
	n.numBounds(s)
	return n
}

// onlyFastFields reports whether every exported field of s outside fastFields is zero.
func onlyFastFields(s *jsonschema.Schema) bool {
	v := reflect.ValueOf(s).Elem()
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && !fastFields[f.Name] && !v.Field(i).IsZero() {
			return false
		}
	}
	return true
}

func intOr(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

func (n *fastNode) numBounds(s *jsonschema.Schema) {
	bound := func(r *big.Rat, v *int64, has *bool) {
		if r == nil {
			return
		}
		n.hasBounds = true
		if !r.IsInt() || !r.Num().IsInt64() {
			n.numOpaque = true
			return
		}
		*v, *has = r.Num().Int64(), true
	}
	bound(s.Minimum, &n.min, &n.hasMin)
	bound(s.Maximum, &n.max, &n.hasMax)
	bound(s.ExclusiveMinimum, &n.exclMin, &n.hasExclMin)
	bound(s.ExclusiveMaximum, &n.exclMax, &n.hasExclMax)
}

// valid reports whether v certainly satisfies the schema; false means "not known" (the
// library decides). v is a decoded JSON tree; other Go types are not known.
func (n *fastNode) valid(v any) bool {
	if n.opaque || n.never {
		return false
	}
	var t uint8
	var num int64
	isInt := false
	switch x := v.(type) {
	case nil:
		t = ftNull
	case bool:
		t = ftBoolean
	case string:
		t = ftString
	case json.Number:
		t = ftNumber
		num, isInt = plainInt(string(x))
	case map[string]any:
		t = ftObject
	case []any:
		t = ftArray
	default:
		return false
	}
	if n.types != 0 && n.types&t == 0 && (t != ftNumber || n.types&ftInteger == 0 || !isInt) {
		return false
	}
	if n.hasConst && !scalarEqual(v, n.constant) {
		return false
	}
	if n.hasEnum && !n.inEnum(v) {
		return false
	}
	if n.format != nil && n.format.Validate(v) != nil {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		return n.validObject(x)
	case []any:
		return n.validArray(x)
	case string:
		return n.validString(x)
	case json.Number:
		return n.validNumber(num, isInt)
	}
	return true
}

func (n *fastNode) validObject(obj map[string]any) bool {
	if (n.minProps >= 0 && len(obj) < n.minProps) || (n.maxProps >= 0 && len(obj) > n.maxProps) {
		return false
	}
	for _, r := range n.required {
		if _, ok := obj[r]; !ok {
			return false
		}
	}
	for k, e := range obj {
		if p, ok := n.props[k]; ok {
			if !p.valid(e) {
				return false
			}
		} else if n.additional != nil && !n.additional.valid(e) {
			return false
		}
	}
	return true
}

func (n *fastNode) validArray(arr []any) bool {
	if (n.minItems >= 0 && len(arr) < n.minItems) || (n.maxItems >= 0 && len(arr) > n.maxItems) {
		return false
	}
	if n.items != nil {
		for _, e := range arr {
			if !n.items.valid(e) {
				return false
			}
		}
	}
	return true
}

func (n *fastNode) validString(s string) bool {
	// The library counts runes; a string has at most as many runes as bytes, so the
	// count is needed only when the byte length does not settle it.
	if n.minLen > 0 && (len(s) < n.minLen || utf8.RuneCountInString(s) < n.minLen) {
		return false
	}
	if n.maxLen >= 0 && len(s) > n.maxLen && utf8.RuneCountInString(s) > n.maxLen {
		return false
	}
	return n.pattern == nil || n.pattern.MatchString(s)
}

func (n *fastNode) validNumber(v int64, isInt bool) bool {
	if !n.hasBounds {
		return true
	}
	if n.numOpaque || !isInt {
		return false
	}
	return (!n.hasMin || v >= n.min) && (!n.hasMax || v <= n.max) &&
		(!n.hasExclMin || v > n.exclMin) && (!n.hasExclMax || v < n.exclMax)
}

// inEnum reports whether v is certainly one of the enum's values. Only strings, booleans
// and null are compared here; the library compares numbers, arrays and objects.
func (n *fastNode) inEnum(v any) bool {
	for _, e := range n.enum {
		if scalarEqual(v, e) {
			return true
		}
	}
	return false
}

// scalarEqual reports whether v is a string, boolean or null equal to w, as the
// library's equality does for those types; false for any other v.
func scalarEqual(v, w any) bool {
	switch x := v.(type) {
	case nil:
		return w == nil
	case bool:
		y, ok := w.(bool)
		return ok && x == y
	case string:
		y, ok := w.(string)
		return ok && x == y
	}
	return false
}

// plainInt parses an integer literal of at most 18 digits (so it fits int64), as the
// canonical form keeps it; ok is false for anything else (fractions, exponents, longer
// literals), which the fast path leaves to the library.
func plainInt(s string) (int64, bool) {
	i, neg := 0, false
	if i < len(s) && s[i] == '-' {
		neg, i = true, 1
	}
	if i == len(s) || len(s)-i > 18 {
		return 0, false
	}
	var v int64
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}
