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
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// parser is a strict RFC 8259 parser producing the decoded tree used everywhere in the
// package (map[string]any, []any, string, json.Number, bool, nil). It replaces
// encoding/json's token stream, which allocates per token and was most of the cost of a
// call; FuzzFreeze checks it against encoding/json (same acceptance, same values).
// Compared with encoding/json it also rejects what would make canonical bytes ambiguous:
// duplicate keys, escaped lone surrogates (encoding/json turns them into U+FFFD) and
// invalid UTF-8 (checked by the caller).
//
// The parser reads a string, not bytes: the caller copies the input into one string,
// and every key, number and escape-free string of the tree is a substring of it. That
// makes them free instead of one allocation each (most of Freeze's garbage), at the
// cost that any retained part of the tree keeps the whole input alive, which the Frozen
// holding the tree does anyway.
//
// With emit set, the parser also writes the canonical form of the value into out as it
// goes (see canonical.go), so freezing needs no second walk over the tree: scalars are
// written as they are parsed (a string whose escapes are already canonical is copied as
// it is), and the members of an object are reordered in place when their keys were not
// already in canonical order.
type parser struct {
	data     string
	pos      int
	maxDepth int
	path     []segment // formatted only when an error is reported

	emit    bool
	out     []byte
	deepest int      // the deepest value's nesting level
	members []member // the members of the objects being parsed, innermost last
	scratch []byte   // reordering space for finishObject
	// canonEscapes is cleared by an escape sequence that differs from the canonical one.
	canonEscapes bool
}

// member is where one object member ("key":value) was written in out.
type member struct {
	key        string
	start, end int
}

// segment is one step of the path to the member being parsed.
type segment struct {
	key   string
	index int
	array bool
}

func (p *parser) fail(format string, args ...any) *FreezeError {
	msg := fmt.Sprintf(format, args...)
	if ptr := p.pointer(); ptr != "" {
		msg += " (at " + ptr + ")"
	}
	return &FreezeError{Reason: ReasonArgumentsNotObject, Pointer: p.pointer(), Msg: msg}
}

func (p *parser) unexpected() *FreezeError {
	if p.pos >= len(p.data) {
		return p.fail("invalid JSON: unexpected end of input")
	}
	r, _ := utf8.DecodeRuneInString(p.data[p.pos:])
	return p.fail("invalid JSON: unexpected character %q at byte %d", r, p.pos)
}

func (p *parser) pointer() string {
	tokens := make([]string, len(p.path))
	for i, s := range p.path {
		tokens[i] = s.key
		if s.array {
			tokens[i] = strconv.Itoa(s.index)
		}
	}
	return jsonPointer(tokens)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// jsonPointer formats reference tokens as an RFC 6901 pointer.
func jsonPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value parses one value; leading whitespace must already be skipped.
func (p *parser) value(depth int) (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.unexpected()
	}
	p.deepest = max(p.deepest, depth)
	switch c := p.data[p.pos]; {
	case c == '{' || c == '[':
		if depth >= p.maxDepth {
			return nil, p.fail("JSON nested deeper than %d levels", p.maxDepth)
		}
		p.pos++
		if c == '{' {
			return p.object(depth + 1)
		}
		return p.array(depth + 1)
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true", true)
	case c == 'f':
		return p.literal("false", false)
	case c == 'n':
		return p.literal("null", nil)
	}
	return nil, p.unexpected()
}

func (p *parser) literal(word string, v any) (any, error) {
	if !strings.HasPrefix(p.data[p.pos:], word) {
		return nil, p.unexpected()
	}
	p.pos += len(word)
	if p.emit {
		p.out = append(p.out, word...)
	}
	return v, nil
}

func (p *parser) object(depth int) (any, error) {
	m := make(map[string]any)
	p.skipSpace()
	if p.emit {
		p.out = append(p.out, '{')
	}
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		if p.emit {
			p.out = append(p.out, '}')
		}
		return m, nil
	}
	base, first := len(p.members), len(p.out)
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.unexpected()
		}
		if p.emit && len(m) > 0 {
			p.out = append(p.out, ',')
		}
		start := len(p.out)
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.path = append(p.path, segment{key: key})
		if _, dup := m[key]; dup {
			return nil, p.fail("duplicate key %q", key)
		}
		if err := p.expect(':'); err != nil {
			return nil, err
		}
		if p.emit {
			p.out = append(p.out, ':')
		}
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		p.popPath()
		m[key] = v
		if p.emit {
			p.members = append(p.members, member{key: key, start: start, end: len(p.out)})
		}
		if done, err := p.next('}'); done || err != nil {
			if done && p.emit {
				p.finishObject(base, first)
			}
			return m, err
		}
	}
}

// finishObject puts the members written since first in canonical key order, unless they
// already are (as in input that was canonical or encoded from sorted keys), and closes
// the object.
func (p *parser) finishObject(base, first int) {
	ms := p.members[base:]
	sorted := true
	for i := 1; i < len(ms) && sorted; i++ {
		sorted = compareKeys(ms[i-1].key, ms[i].key) < 0
	}
	if !sorted {
		slices.SortFunc(ms, func(a, b member) int { return compareKeys(a.key, b.key) })
		if first <= len(p.out)-first {
			// Build the whole output again in scratch and swap: copying what precedes
			// the object (for the top-level object, just "{") costs less than copying
			// the members out and back.
			b := append(p.scratch[:0], p.out[:first]...)
			b = appendMembers(b, p.out, 0, ms)
			p.out, p.scratch = b, p.out
		} else {
			p.scratch = append(p.scratch[:0], p.out[first:]...)
			p.out = appendMembers(p.out[:first], p.scratch, first, ms)
		}
	}
	clear(ms) // the pooled parser must not keep keys (and so the document) alive
	p.members = p.members[:base]
	p.out = append(p.out, '}')
}

// appendMembers appends the members' text, separated by commas; src holds the output
// from offset base on.
func appendMembers(dst, src []byte, base int, ms []member) []byte {
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, src[m.start-base:m.end-base]...)
	}
	return dst
}

func (p *parser) popPath() {
	p.path[len(p.path)-1] = segment{}
	p.path = p.path[:len(p.path)-1]
}

func (p *parser) array(depth int) (any, error) {
	a := make([]any, 0, 4)
	p.skipSpace()
	if p.emit {
		p.out = append(p.out, '[')
	}
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		if p.emit {
			p.out = append(p.out, ']')
		}
		return a, nil
	}
	p.path = append(p.path, segment{array: true})
	for {
		p.path[len(p.path)-1].index = len(a)
		if p.emit && len(a) > 0 {
			p.out = append(p.out, ',')
		}
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		if done, err := p.next(']'); done || err != nil {
			p.popPath()
			if done && p.emit {
				p.out = append(p.out, ']')
			}
			return a, err
		}
	}
}

// expect consumes optional whitespace, the byte c, and whitespace after it.
func (p *parser) expect(c byte) error {
	p.skipSpace()
	if p.pos >= len(p.data) || p.data[p.pos] != c {
		return p.unexpected()
	}
	p.pos++
	p.skipSpace()
	return nil
}

// next consumes the separator after a member: ',' (done false) or the closing byte.
func (p *parser) next(closing byte) (bool, error) {
	p.skipSpace()
	if p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
			return false, nil
		case closing:
			p.pos++
			return true, nil
		}
	}
	return false, p.unexpected()
}

func (p *parser) number() (any, error) {
	start := p.pos
	end := start
	for end < len(p.data) && isNumberByte(p.data[end]) {
		end++
	}
	lit := p.data[start:end]
	if !isJSONNumber(lit) {
		return nil, p.fail("invalid JSON: malformed number %q at byte %d", lit, start)
	}
	p.pos = end
	n := normNumber(lit)
	if p.emit {
		p.out = append(p.out, n...)
	}
	return json.Number(n), nil
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// str parses a string starting at the opening quote. The input is valid UTF-8.
func (p *parser) str() (string, error) {
	start := p.pos + 1
	if i := skipPlain(p.data, start); i < len(p.data) {
		switch c := p.data[i]; {
		case c == '"':
			p.pos = i + 1
			if p.emit {
				// No escapes, no control characters: the text is canonical as it is.
				p.out = append(p.out, p.data[start-1:i+1]...)
			}
			return p.data[start:i], nil
		case c == '\\':
			if !p.emit {
				return p.escapedStr(start, i)
			}
			p.canonEscapes = true
			s, err := p.escapedStr(start, i)
			if err == nil {
				if p.canonEscapes {
					p.out = append(p.out, p.data[start-1:p.pos]...)
				} else {
					p.out = appendValidString(p.out, s)
				}
			}
			return s, err
		case c < 0x20:
			p.pos = i
			return "", p.fail("invalid JSON: control character in string at byte %d", i)
		}
	}
	p.pos = len(p.data)
	return "", p.unexpected()
}

// escapedStr finishes a string that contains escapes; i is the first backslash. The
// next quote bounds the unescaped length unless an escaped quote precedes it, so the
// builder is sized from a fast IndexByte and usually built in one allocation. Runs of
// plain bytes are copied at once.
func (p *parser) escapedStr(start, i int) (string, error) {
	var b strings.Builder
	if q := strings.IndexByte(p.data[i:], '"'); q >= 0 {
		b.Grow(i + q - start)
	}
	b.WriteString(p.data[start:i])
	for i < len(p.data) {
		j := skipPlain(p.data, i)
		b.WriteString(p.data[i:j])
		if i = j; i >= len(p.data) {
			break
		}
		switch c := p.data[i]; {
		case c == '"':
			p.pos = i + 1
			return b.String(), nil
		case c < 0x20:
			p.pos = i
			return "", p.fail("invalid JSON: control character in string at byte %d", i)
		}
		var err error
		if i, err = p.escape(&b, i); err != nil {
			return "", err
		}
	}
	p.pos = len(p.data)
	return "", p.unexpected()
}

// escape decodes the escape sequence at data[i] (a backslash) onto b and returns the
// index after it.
func (p *parser) escape(b *strings.Builder, i int) (int, error) {
	if i+1 >= len(p.data) {
		p.pos = len(p.data)
		return i, p.unexpected()
	}
	c := p.data[i+1]
	switch c {
	case '"', '\\':
	case '/':
		p.canonEscapes = false // canonical strings do not escape '/'
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	case 'u':
		return p.unicodeEscape(b, i)
	default:
		p.pos = i
		return i, p.fail("invalid JSON: invalid escape at byte %d", i)
	}
	b.WriteByte(c)
	return i + 2, nil
}

func (p *parser) unicodeEscape(b *strings.Builder, i int) (int, error) {
	u, ok := hex4(p.data[i:])
	if !ok {
		p.pos = i
		return i, p.fail("invalid JSON: invalid \\u escape at byte %d", i)
	}
	r := rune(u)
	if !canonicalUnicodeEscape(p.data[i+2:i+6], r) {
		p.canonEscapes = false
	}
	if utf16.IsSurrogate(r) {
		lo, ok := hex4(p.data[i+6:])
		if r >= 0xDC00 || !ok || p.data[i+6] != '\\' || p.data[i+7] != 'u' {
			p.pos = i
			return i, p.fail("invalid \\u escape at byte %d: lone UTF-16 surrogate", i)
		}
		if r = utf16.DecodeRune(r, rune(lo)); r == utf8.RuneError {
			p.pos = i
			return i, p.fail("invalid \\u escape at byte %d: lone UTF-16 surrogate", i)
		}
		b.WriteRune(r)
		return i + 12, nil
	}
	b.WriteRune(r)
	return i + 6, nil
}

// hex4 reads the four hex digits of a "\uXXXX" escape at the start of b.
func hex4(b string) (int, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	v := 0
	for i := 2; i < 6; i++ {
		switch c := b[i]; {
		case c >= '0' && c <= '9':
			v = v<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// canonicalUnicodeEscape reports whether \u followed by hex (the four digits, decoding
// to r) is how the canonical form writes r: only control characters without a short
// escape are written that way, in lower-case hex.
func canonicalUnicodeEscape(hex string, r rune) bool {
	switch r {
	case '\b', '\f', '\n', '\r', '\t':
		return false
	}
	return r < 0x20 && hex[0] == '0' && hex[1] == '0' && hex[2] == hexDigits[r>>4] && hex[3] == hexDigits[r&0xF]
}
