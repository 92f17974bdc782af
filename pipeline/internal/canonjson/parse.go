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
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// parser is a strict RFC 8259 parser producing the decoded tree the pipeline works on
// (map[string]any, []any, string, json.Number, bool, nil). It replaces encoding/json's
// token stream, which allocates per token and was most of the cost of a call; the
// pipeline's FuzzFreeze and this package's FuzzEncodeCanonical check it against
// encoding/json (same acceptance, same values). Compared with encoding/json it also
// rejects what would make canonical bytes ambiguous: duplicate keys, escaped lone
// surrogates (encoding/json turns them into U+FFFD) and invalid UTF-8 (checked by parse
// before the parser runs).
//
// It works in two passes. The first reads the input (a string, or the caller's bytes
// without copying them) and checks it, writes its canonical form into out (see
// canonical.go: scalars as they are parsed, a string whose escapes are already canonical
// copied as it is, an object's members reordered in place when their keys were not in
// canonical order) and records the values on a tape. The second builds the tree from the
// tape: every key, number and escape-free string of the tree is a substring of the one
// canonical string the caller keeps anyway (the pipeline's Frozen does), so they cost
// no allocation, and no copy of the input is made (the canonical text was the second
// copy of a call's arguments). Any retained part of the tree keeps the canonical string
// alive, which a Frozen does anyway.
type parser[T text] struct {
	data     T
	pos      int
	maxDepth int
	deepest  int       // the deepest value's nesting level
	path     []segment // formatted only when an error is reported

	out     []byte      // the canonical form
	tape    []tapeEntry // the values, in input order
	decoded []string    // strings with escapes, decoded
	members []member    // the members of the objects being parsed, innermost last
	scratch []byte      // reordering space for finishObject
	decbuf  []byte      // decoding space for escapedStr
	// canonEscapes is cleared by an escape sequence that differs from the canonical one.
	canonEscapes bool
}

// Kinds of tape entries.
const (
	tapeObject byte = iota // n members follow, each a tapeKey and its value
	tapeArray              // n items follow
	tapeKey
	tapeString
	tapeNumber
	tapeTrue
	tapeFalse
	tapeNull
)

// tapeEntry is one value (or key) of the document. start and end delimit its canonical
// text in out as it was written (a string's without the quotes). Reordering an object
// moves each member's text as a block; the member's key entry records by how much
// (delta), which applies to everything inside the member, so positions are final once
// the deltas of the enclosing members are added up.
type tapeEntry struct {
	kind       byte
	start, end int
	n          int // objects and arrays: members or items; strings and keys: 1 + index in decoded, 0 when not escaped
	delta      int // keys: how far reordering moved the member
}

// member is an object member being parsed: its key (the text in data without quotes,
// or a decoded string), where "key":value was written in out and its key's tape entry.
type member struct {
	keyStart, keyEnd int
	dec              int // 1 + index in decoded when the key has escapes
	start, end       int
	tape             int
}

// segment is one step of the path to the member being parsed.
type segment struct {
	keyStart, keyEnd, dec int // as in member
	index                 int
	array                 bool
}

var (
	stringParsers = sync.Pool{New: func() any { return new(parser[string]) }}
	bytesParsers  = sync.Pool{New: func() any { return new(parser[[]byte]) }}
)

// parserPool recycles the parser's own scratch space (tape, path, members, buffers),
// which would otherwise be allocated and grown again for every document.
func parserPool[T text]() *sync.Pool {
	var zero T
	if _, ok := any(zero).(string); ok {
		return &stringParsers
	}
	return &bytesParsers
}

// maxPooledBuffer keeps a rare huge document from pinning its buffers in the pool.
const maxPooledBuffer = 1 << 20

func getParser[T text](data T, maxDepth int) *parser[T] {
	p := parserPool[T]().Get().(*parser[T])
	p.data, p.maxDepth = data, maxDepth
	p.out = slices.Grow(p.out, len(data))
	return p
}

// putParser clears p (it must not keep the document or its strings alive) and recycles
// it, unless a rare huge document grew its buffers.
func putParser[T text](p *parser[T]) {
	if cap(p.out) > maxPooledBuffer || cap(p.scratch) > maxPooledBuffer || cap(p.decbuf) > maxPooledBuffer ||
		cap(p.tape) > maxPooledBuffer/32 || cap(p.members) > 1<<12 || cap(p.path) > 1<<10 {
		return
	}
	clear(p.decoded)
	*p = parser[T]{path: p.path[:0], out: p.out[:0], tape: p.tape[:0], decoded: p.decoded[:0],
		members: p.members[:0], scratch: p.scratch[:0], decbuf: p.decbuf[:0]}
	parserPool[T]().Put(p)
}

// parse parses exactly one JSON value of any kind under the given limits. src is data
// when data is a string, so that canonical input is its own canonical text.
func parse[T text](data T, src string, opts Options) (Document, error) {
	if len(data) > opts.MaxBytes {
		return Document{}, &Error{TooLarge: true,
			Msg: fmt.Sprintf("JSON document is %d bytes, over the limit of %d bytes", len(data), opts.MaxBytes)}
	}
	if !validUTF8(data) {
		return Document{}, invalid("input is not valid UTF-8 (byte %d)", firstInvalidUTF8(string(data)))
	}
	p := getParser(data, opts.MaxDepth)
	defer putParser(p)
	p.skipSpace()
	if err := p.value(0); err != nil {
		return Document{}, err
	}
	p.skipSpace()
	if p.pos != len(data) {
		return Document{}, invalid("invalid JSON: unexpected data after the value at byte %d", p.pos)
	}
	doc := Document{Canonical: src, Deepest: p.deepest}
	if string(p.out) != src {
		doc.Canonical = string(p.out)
	}
	if opts.Digest {
		doc.Digest = Digest(p.out)
	}
	b := builder{tape: p.tape, canonical: doc.Canonical, decoded: p.decoded}
	doc.Value = b.value(0)
	return doc, nil
}

func validUTF8[T text](s T) bool {
	if b, ok := any(s).([]byte); ok {
		return utf8.Valid(b)
	}
	return utf8.ValidString(string(s))
}

func firstInvalidUTF8(b string) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRuneInString(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// invalid reports a whole-document problem (no member to point at).
func invalid(format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

func (p *parser[T]) fail(format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if ptr := p.pointer(); ptr != "" {
		msg += " (at " + ptr + ")"
	}
	return &Error{Pointer: p.pointer(), Msg: msg}
}

func (p *parser[T]) unexpected() *Error {
	if p.pos >= len(p.data) {
		return p.fail("invalid JSON: unexpected end of input")
	}
	r, _ := decodeRune(p.data[p.pos:])
	return p.fail("invalid JSON: unexpected character %q at byte %d", r, p.pos)
}

func (p *parser[T]) pointer() string {
	tokens := make([]string, len(p.path))
	for i, s := range p.path {
		if s.array {
			tokens[i] = strconv.Itoa(s.index)
		} else {
			tokens[i] = p.key(s.keyStart, s.keyEnd, s.dec)
		}
	}
	return Pointer(tokens)
}

// key returns a key as a string (allocating for a key read from bytes).
func (p *parser[T]) key(start, end, dec int) string {
	if dec > 0 {
		return p.decoded[dec-1]
	}
	return string(p.data[start:end])
}

func (p *parser[T]) skipSpace() {
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
func (p *parser[T]) value(depth int) error {
	if p.pos >= len(p.data) {
		return p.unexpected()
	}
	p.deepest = max(p.deepest, depth)
	switch c := p.data[p.pos]; {
	case c == '{' || c == '[':
		if depth >= p.maxDepth {
			return p.fail("JSON nested deeper than %d levels", p.maxDepth)
		}
		p.pos++
		if c == '{' {
			return p.object(depth + 1)
		}
		return p.array(depth + 1)
	case c == '"':
		_, _, _, err := p.str(tapeString)
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true", tapeTrue)
	case c == 'f':
		return p.literal("false", tapeFalse)
	case c == 'n':
		return p.literal("null", tapeNull)
	}
	return p.unexpected()
}

func (p *parser[T]) literal(word string, kind byte) error {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return p.unexpected()
	}
	p.pos += len(word)
	p.out = append(p.out, word...)
	p.tape = append(p.tape, tapeEntry{kind: kind})
	return nil
}

// smallDuplicateScan is the member count up to which duplicate keys are found by comparing
// with each earlier member rather than through a set.
const smallDuplicateScan = 32

func (p *parser[T]) object(depth int) error {
	entry := len(p.tape)
	p.tape = append(p.tape, tapeEntry{kind: tapeObject})
	p.skipSpace()
	p.out = append(p.out, '{')
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.out = append(p.out, '}')
		return nil
	}
	base, first := len(p.members), len(p.out)
	var seen map[string]struct{} // for large objects
	for n := 0; ; n++ {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.unexpected()
		}
		if n > 0 {
			p.out = append(p.out, ',')
		}
		start, keyEntry := len(p.out), len(p.tape)
		ks, ke, dec, err := p.str(tapeKey)
		if err != nil {
			return err
		}
		p.path = append(p.path, segment{keyStart: ks, keyEnd: ke, dec: dec})
		if p.duplicate(base, ks, ke, dec, &seen) {
			return p.fail("duplicate key %q", p.key(ks, ke, dec))
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		p.out = append(p.out, ':')
		if err := p.value(depth); err != nil {
			return err
		}
		p.popPath()
		p.members = append(p.members, member{keyStart: ks, keyEnd: ke, dec: dec, start: start, end: len(p.out), tape: keyEntry})
		if done, err := p.next('}'); done || err != nil {
			if done {
				p.tape[entry].n = n + 1
				p.finishObject(base, first)
			}
			return err
		}
	}
}

// duplicate reports whether the key (ks, ke, dec) equals one of the object's earlier
// members (from base on), comparing decoded keys.
func (p *parser[T]) duplicate(base, ks, ke, dec int, seen *map[string]struct{}) bool {
	ms := p.members[base:]
	if len(ms) < smallDuplicateScan {
		for _, m := range ms {
			if p.sameKey(m, ks, ke, dec) {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]struct{}, 2*len(ms))
		for _, m := range ms {
			(*seen)[p.key(m.keyStart, m.keyEnd, m.dec)] = struct{}{}
		}
	}
	k := p.key(ks, ke, dec)
	if _, dup := (*seen)[k]; dup {
		return true
	}
	(*seen)[k] = struct{}{}
	return false
}

func (p *parser[T]) sameKey(m member, ks, ke, dec int) bool {
	switch {
	case m.dec == 0 && dec == 0:
		return string(p.data[m.keyStart:m.keyEnd]) == string(p.data[ks:ke])
	case m.dec == 0:
		return string(p.data[m.keyStart:m.keyEnd]) == p.decoded[dec-1]
	case dec == 0:
		return p.decoded[m.dec-1] == string(p.data[ks:ke])
	}
	return p.decoded[m.dec-1] == p.decoded[dec-1]
}

// compareMembers orders members by their decoded keys.
func (p *parser[T]) compareMembers(a, b member) int {
	switch {
	case a.dec == 0 && b.dec == 0:
		return compareKeys(p.data[a.keyStart:a.keyEnd], p.data[b.keyStart:b.keyEnd])
	case a.dec == 0:
		return compareKeys(p.data[a.keyStart:a.keyEnd], p.decoded[b.dec-1])
	case b.dec == 0:
		return compareKeys(p.decoded[a.dec-1], p.data[b.keyStart:b.keyEnd])
	}
	return compareKeys(p.decoded[a.dec-1], p.decoded[b.dec-1])
}

// finishObject puts the members written since first in canonical key order, unless they
// already are (as in input that was canonical or encoded from sorted keys), and closes
// the object.
func (p *parser[T]) finishObject(base, first int) {
	ms := p.members[base:]
	sorted := true
	for i := 1; i < len(ms) && sorted; i++ {
		sorted = p.compareMembers(ms[i-1], ms[i]) < 0
	}
	if !sorted {
		slices.SortFunc(ms, p.compareMembers)
		if first <= len(p.out)-first {
			// Build the whole output again in scratch and swap: copying what precedes
			// the object (for the top-level object, just "{") costs less than copying
			// the members out and back.
			p.scratch = append(p.scratch[:0], p.out[:first]...)
			p.scratch = p.appendMembers(p.scratch, p.out, 0, ms)
			p.out, p.scratch = p.scratch, p.out
		} else {
			p.scratch = append(p.scratch[:0], p.out[first:]...)
			p.out = p.appendMembers(p.out[:first], p.scratch, first, ms)
		}
	}
	p.members = p.members[:base]
	p.out = append(p.out, '}')
}

// appendMembers appends the members' text, separated by commas, and records how far
// each moved; src holds the output from offset base on.
func (p *parser[T]) appendMembers(dst, src []byte, base int, ms []member) []byte {
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		p.tape[m.tape].delta = len(dst) - m.start
		dst = append(dst, src[m.start-base:m.end-base]...)
	}
	return dst
}

func (p *parser[T]) popPath() {
	p.path = p.path[:len(p.path)-1]
}

func (p *parser[T]) array(depth int) error {
	entry := len(p.tape)
	p.tape = append(p.tape, tapeEntry{kind: tapeArray})
	p.skipSpace()
	p.out = append(p.out, '[')
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.out = append(p.out, ']')
		return nil
	}
	p.path = append(p.path, segment{array: true})
	for n := 0; ; n++ {
		p.path[len(p.path)-1].index = n
		if n > 0 {
			p.out = append(p.out, ',')
		}
		if err := p.value(depth); err != nil {
			return err
		}
		if done, err := p.next(']'); done || err != nil {
			p.popPath()
			if done {
				p.tape[entry].n = n + 1
				p.out = append(p.out, ']')
			}
			return err
		}
	}
}

// expect consumes optional whitespace, the byte c, and whitespace after it.
func (p *parser[T]) expect(c byte) error {
	p.skipSpace()
	if p.pos >= len(p.data) || p.data[p.pos] != c {
		return p.unexpected()
	}
	p.pos++
	p.skipSpace()
	return nil
}

// next consumes the separator after a member: ',' (done false) or the closing byte.
func (p *parser[T]) next(closing byte) (bool, error) {
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

func (p *parser[T]) number() error {
	start := p.pos
	end := start
	for end < len(p.data) && isNumberByte(p.data[end]) {
		end++
	}
	lit := p.data[start:end]
	if !isJSONNumber(lit) {
		return p.fail("invalid JSON: malformed number %q at byte %d", string(lit), start)
	}
	p.pos = end
	at := len(p.out)
	p.out = appendNormNumber(p.out, lit)
	p.tape = append(p.tape, tapeEntry{kind: tapeNumber, start: at, end: len(p.out)})
	return nil
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// str parses a string starting at the opening quote, writes it and records it as kind
// (tapeString or tapeKey). It returns where its text is in data and, for a string with
// escapes, 1 + its index in decoded. The input is valid UTF-8.
func (p *parser[T]) str(kind byte) (start, end, dec int, err error) {
	start = p.pos + 1
	i := skipPlain(p.data, start)
	if i >= len(p.data) {
		p.pos = len(p.data)
		return 0, 0, 0, p.unexpected()
	}
	switch p.data[i] {
	case '"':
		// No escapes, no control characters: the text is canonical as it is.
		p.pos = i + 1
		at := len(p.out)
		p.out = append(p.out, p.data[start-1:i+1]...)
		p.tape = append(p.tape, tapeEntry{kind: kind, start: at + 1, end: len(p.out) - 1})
		return start, i, 0, nil
	case '\\':
		p.canonEscapes = true
		s, err := p.escapedStr(start, i)
		if err != nil {
			return 0, 0, 0, err
		}
		p.decoded = append(p.decoded, s)
		at := len(p.out)
		if p.canonEscapes {
			p.out = append(p.out, p.data[start-1:p.pos]...)
		} else {
			p.out = appendValidString(p.out, s)
		}
		p.tape = append(p.tape, tapeEntry{kind: kind, start: at + 1, end: len(p.out) - 1, n: len(p.decoded)})
		return start, p.pos - 1, len(p.decoded), nil
	}
	p.pos = i
	return 0, 0, 0, p.fail("invalid JSON: control character in string at byte %d", i)
}

// escapedStr decodes a string that contains escapes; i is the first backslash. Runs of
// plain bytes are copied at once.
func (p *parser[T]) escapedStr(start, i int) (string, error) {
	b := p.decbuf[:0]
	b = append(b, p.data[start:i]...)
	for i < len(p.data) {
		j := skipPlain(p.data, i)
		b = append(b, p.data[i:j]...)
		if i = j; i >= len(p.data) {
			break
		}
		switch c := p.data[i]; {
		case c == '"':
			p.pos = i + 1
			p.decbuf = b // keep the grown buffer for the next string
			return string(b), nil
		case c < 0x20:
			p.pos = i
			return "", p.fail("invalid JSON: control character in string at byte %d", i)
		}
		var err error
		if b, i, err = p.escape(b, i); err != nil {
			return "", err
		}
	}
	p.pos = len(p.data)
	return "", p.unexpected()
}

// escape decodes the escape sequence at data[i] (a backslash) onto b and returns the
// index after it.
func (p *parser[T]) escape(b []byte, i int) ([]byte, int, error) {
	if i+1 >= len(p.data) {
		p.pos = len(p.data)
		return b, i, p.unexpected()
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
		return b, i, p.fail("invalid JSON: invalid escape at byte %d", i)
	}
	return append(b, c), i + 2, nil
}

func (p *parser[T]) unicodeEscape(b []byte, i int) ([]byte, int, error) {
	u, ok := hex4(p.data[i:])
	if !ok {
		p.pos = i
		return b, i, p.fail("invalid JSON: invalid \\u escape at byte %d", i)
	}
	r := rune(u)
	if !canonicalUnicodeEscape(p.data[i+2:i+6], r) {
		p.canonEscapes = false
	}
	if utf16.IsSurrogate(r) {
		lo, ok := hex4(p.data[i+6:])
		if r >= 0xDC00 || !ok {
			p.pos = i
			return b, i, p.fail("invalid \\u escape at byte %d: lone UTF-16 surrogate", i)
		}
		if r = utf16.DecodeRune(r, rune(lo)); r == utf8.RuneError {
			p.pos = i
			return b, i, p.fail("invalid \\u escape at byte %d: lone UTF-16 surrogate", i)
		}
		return utf8.AppendRune(b, r), i + 12, nil
	}
	return utf8.AppendRune(b, r), i + 6, nil
}

// hex4 reads the four hex digits of a "\uXXXX" escape at the start of b.
func hex4[T text](b T) (int, bool) {
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
func canonicalUnicodeEscape[T text](hex T, r rune) bool {
	switch r {
	case '\b', '\f', '\n', '\r', '\t':
		return false
	}
	return r < 0x20 && hex[0] == '0' && hex[1] == '0' && hex[2] == hexDigits[r>>4] && hex[3] == hexDigits[r&0xF]
}

// builder makes the tree from a parser's tape (the second pass).
type builder struct {
	tape      []tapeEntry
	i         int
	canonical string
	decoded   []string
}

// value builds the value at the tape's current entry; shift is the sum of the deltas of
// the members it is in.
func (b *builder) value(shift int) any {
	e := &b.tape[b.i]
	b.i++
	switch e.kind {
	case tapeObject:
		m := make(map[string]any, e.n)
		for range e.n {
			k := &b.tape[b.i]
			b.i++
			at := shift + k.delta
			key := b.str(k, at)
			m[key] = b.value(at)
		}
		return m
	case tapeArray:
		a := make([]any, e.n)
		for j := range a {
			a[j] = b.value(shift)
		}
		return a
	case tapeString:
		return b.str(e, shift)
	case tapeNumber:
		return json.Number(b.canonical[e.start+shift : e.end+shift])
	case tapeTrue:
		return true
	case tapeFalse:
		return false
	}
	return nil
}

func (b *builder) str(e *tapeEntry, shift int) string {
	if e.n > 0 {
		return b.decoded[e.n-1]
	}
	return b.canonical[e.start+shift : e.end+shift]
}
