package display

import (
	"fmt"
	"iter"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultMaxLine is the longest line Line and Text show, in characters as shown; the rest
// of a longer line is cut with a marker.
const DefaultMaxLine = 4096

// Options say how text is shown.
type Options struct {
	// Multiline keeps newlines and tabs as they are (multi-line output); otherwise they are
	// escaped like every other control character (a one-line field).
	Multiline bool
	// MaxLine cuts each line after this many characters as shown (an escape counts its
	// length), ending it with a marker that says how many bytes were left out; 0: no cut.
	MaxLine int
}

var (
	line = Options{MaxLine: DefaultMaxLine}
	text = Options{Multiline: true, MaxLine: DefaultMaxLine}
)

// Line shows s as one line: every control, format and invisible character escaped,
// newlines and tabs included; cut after DefaultMaxLine characters.
func Line(s string) string { return line.String(s) }

// Text shows s as multi-line text: newlines and tabs kept, everything else as Line does;
// each line cut after DefaultMaxLine characters.
func Text(s string) string { return text.String(s) }

// String shows s as o says.
func (o Options) String(s string) string {
	if o.plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for p := range o.Pieces(s) {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Piece is a run of shown text: Plain text of the input as it is, or one Escape (an
// escaped character, an invalid byte, or a cut marker).
type Piece struct {
	Text   string
	Escape bool
}

// Pieces yields s as shown, in order: runs of plain text and escapes. Concatenated, the
// pieces' texts are o.String(s).
func (o Options) Pieces(s string) iter.Seq[Piece] {
	return func(yield func(Piece) bool) {
		st := state{o: o}
		emit := func(t string, esc bool) bool { return yield(Piece{Text: t, Escape: esc}) }
		if _, ok := st.process(s, true, emit); ok {
			st.endLine(emit)
		}
	}
}

// plain reports whether s is shown as it is: short printable ASCII (the common case,
// without allocating).
func (o Options) plain(s string) bool {
	if o.MaxLine > 0 && len(s) > o.MaxLine {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// state walks text: where the current line stands against MaxLine, and what came last.
type state struct {
	o Options
	// col is the characters shown of the current line.
	col int
	// cutting: the current line is past MaxLine; dropped counts its bytes left out.
	cutting bool
	dropped int
	// afterBase: the last character shown was visible, so a variation selector may follow.
	afterBase bool
}

// process shows s through emit (text, escaped) and returns how many bytes of s it took:
// all of them at EOF, else all but an incomplete UTF-8 sequence at the end, which the
// next call completes. ok is false when emit asked to stop.
func (st *state) process(s string, atEOF bool, emit func(string, bool) bool) (int, bool) {
	start := 0 // the plain run not yet emitted is s[start:i]
	flush := func(end int) bool {
		if end > start {
			return emit(s[start:end], false)
		}
		return true
	}
	i := 0
	for i < len(s) {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			if !atEOF && !utf8.FullRuneInString(s[i:]) {
				break
			}
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if r == '\n' && st.o.Multiline {
			if !flush(i) || !st.endLine(emit) {
				return i, false
			}
			i += size
			start = i - size // the newline itself is plain
			continue
		}
		if st.cutting {
			if !flush(i) {
				return i, false
			}
			st.dropped += size
			i += size
			start = i
			continue
		}
		esc := st.escape(s[i:i+size], r, size)
		shown := 1
		if esc != "" {
			shown = len(esc)
		}
		if st.o.MaxLine > 0 && st.col+shown > st.o.MaxLine {
			if !flush(i) {
				return i, false
			}
			st.cutting, st.dropped = true, size
			i += size
			start = i
			continue
		}
		st.col += shown
		if esc != "" {
			if !flush(i) || !emit(esc, true) {
				return i, false
			}
			st.afterBase = false
			i += size
			start = i
			continue
		}
		if r < utf8.RuneSelf {
			st.afterBase = r > ' '
		} else {
			st.afterBase = !unicode.IsSpace(r) && !unicode.Is(unicode.Variation_Selector, r)
		}
		i += size
	}
	return i, flush(i)
}

// endLine ends the current line: the cut marker when it was cut.
func (st *state) endLine(emit func(string, bool) bool) bool {
	cut, dropped := st.cutting, st.dropped
	st.col, st.cutting, st.dropped, st.afterBase = 0, false, 0, false
	if !cut {
		return true
	}
	return emit(fmt.Sprintf("… [line cut: %d more bytes]", dropped), true)
}

// escape is how the character r (the bytes enc, size long) is shown when not as itself,
// "" when it is shown as itself.
func (st *state) escape(enc string, r rune, size int) string {
	switch {
	case r == utf8.RuneError && size == 1:
		return fmt.Sprintf(`\x%02x`, enc[0])
	case r == '\t' && st.o.Multiline:
		return ""
	case r == '\n':
		return `\n`
	case r == '\r':
		return `\r`
	case r == '\t':
		return `\t`
	case r < 0x20 || r == 0x7f:
		return asciiEscapes[r]
	case r < 0x7f:
		return ""
	case unicode.Is(unicode.Variation_Selector, r):
		if st.afterBase {
			return ""
		}
		return escapeRune(r)
	case hidden(r):
		return escapeRune(r)
	}
	return ""
}

// asciiEscapes are \x00 … \x1f and \x7f, made once (a log may hold many).
var asciiEscapes = func() (t [0x80]string) {
	for c := range t {
		if c < 0x20 || c == 0x7f {
			t[c] = fmt.Sprintf(`\x%02x`, c)
		}
	}
	return t
}()

// hiddenTables are the characters that are never shown as themselves: they control the
// terminal or the layout, or show nothing at all.
var hiddenTables = []*unicode.RangeTable{
	unicode.Cc, // C0, DEL, C1
	unicode.Cf, // format: bidi controls, zero-width characters, BOM, tags, soft hyphen …
	unicode.Zl, // U+2028
	unicode.Zp, // U+2029
	unicode.Other_Default_Ignorable_Code_Point, // invisible fillers (U+115F, U+3164 …), U+034F
	unicode.Noncharacter_Code_Point,
}

func hidden(r rune) bool {
	return unicode.In(r, hiddenTables...)
}

// escapeRune is \uXXXX, or \UXXXXXXXX beyond the BMP.
func escapeRune(r rune) string {
	if r > 0xffff {
		return fmt.Sprintf(`\U%08x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}
