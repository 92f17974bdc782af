package display

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestLine(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"plain ASCII":                            {"review-42", "review-42"},
		"empty":                                  {"", ""},
		"letters of any script":                  {"Grüße, 日本語, привет, مرحبا", "Grüße, 日本語, привет, مرحبا"},
		"emoji":                                  {"ok 👍🏽", "ok 👍🏽"},
		"a variation selector after a character": {"❤️", "❤️"},
		"newline (a faked prompt)":               {"s1\nArguments: ls -l /tmp", `s1\nArguments: ls -l /tmp`},
		"carriage return":                        {"curl x | sh\rls -l /tmp", `curl x | sh\rls -l /tmp`},
		"tab":                                    {"a\tb", `a\tb`},
		"NUL and BEL":                            {"a\x00b\x07", `a\x00b\x07`},
		"ESC: clear screen":                      {"\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		"ESC: OSC 52 clipboard write":            {"\x1b]52;c;Y3VybCB4fHNo\x07", `\x1b]52;c;Y3VybCB4fHNo\x07`},
		"ESC: window title":                      {"\x1b]0;pwned\x1b\\", `\x1b]0;pwned\x1b\`},
		"DEL":                                    {"a\x7fb", `a\x7fb`},
		"C1 CSI":                                 {"a\u009b2J", `a\u009b2J`},
		"C1 NEL":                                 {"a\u0085b", `a\u0085b`},
		"bidi override RLO":                      {"ls \u202eetadpu", `ls \u202eetadpu`},
		"bidi embeddings and PDF":                {"\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
		"bidi isolates":                          {"\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		"bidi marks":                             {"\u200e\u200f\u061c", `\u200e\u200f\u061c`},
		"zero-width space, joiners":              {"a\u200bb\u200cc\u200dd", `a\u200bb\u200cc\u200dd`},
		"word joiner":                            {"a\u2060b", `a\u2060b`},
		"BOM":                                    {"\ufeffa", `\ufeffa`},
		"soft hyphen":                            {"a\u00adb", `a\u00adb`},
		"line and paragraph separators":          {"a\u2028b\u2029c", `a\u2028b\u2029c`},
		"tag characters (hidden ASCII)":          {"hi\U000E0041\U000E0042", `hi\U000e0041\U000e0042`},
		"Hangul filler":                          {"a\u3164b", `a\u3164b`},
		"noncharacter":                           {"a\ufffeb", `a\ufffeb`},
		"variation selector at the start":        {"\ufe0fa", `\ufe0fa`},
		"variation selectors smuggling data":     {"a\ufe00\ufe01\U000E0100", "a\ufe00" + `\ufe01\U000e0100`},
		"invalid UTF-8":                          {"a\xffb\xc3", `a\xffb\xc3`},
		"a lone continuation byte":               {"\x80", `\x80`},
		"U+FFFD itself":                          {"a\ufffdb", "a\ufffdb"},
		"a backslash stays":                      {`C:\tmp`, `C:\tmp`},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Line(tc.in)); diff != "" {
				t.Errorf("Line(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestTextKeepsNewlinesAndTabsOnly(t *testing.T) {
	in := "line 1\n\tline 2\r\n\x1b[31mred\x1b[0m\u202e\n"
	want := "line 1\n\tline 2\\r\n\\x1b[31mred\\x1b[0m\\u202e\n"
	if diff := cmp.Diff(want, Text(in)); diff != "" {
		t.Errorf("Text (-want +got):\n%s", diff)
	}
}

func TestLongLinesAreCutWithAMarker(t *testing.T) {
	o := Options{Multiline: true, MaxLine: 10}
	in := strings.Repeat("a", 25) + "\nshort\n" + "\x1b\x1b\x1b" + "bcdef"
	// The first line keeps 10 characters; the last 3 escapes (12 characters) leave room for
	// two: a line counts what is shown.
	want := strings.Repeat("a", 10) + "… [line cut: 15 more bytes]\nshort\n" + `\x1b\x1b` + "… [line cut: 6 more bytes]"
	if diff := cmp.Diff(want, o.String(in)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := (Options{MaxLine: 4}).String("日本語です"); got != "日本語で… [line cut: 3 more bytes]" {
		t.Errorf("cut counts characters, not bytes: %q", got)
	}
	if got := (Options{}).String(strings.Repeat("x", 10000)); len(got) != 10000 {
		t.Errorf("MaxLine 0 cut the line to %d bytes", len(got))
	}
	long := strings.Repeat("y", DefaultMaxLine+5)
	if got := Line(long); !strings.HasSuffix(got, "y… [line cut: 5 more bytes]") {
		t.Errorf("Line does not cut at DefaultMaxLine: ...%q", got[len(got)-40:])
	}
}

func TestPiecesMarkEscapes(t *testing.T) {
	var got []Piece
	for p := range line.Pieces("ok\u202ex\x1b") {
		got = append(got, p)
	}
	want := []Piece{{"ok", false}, {`\u202e`, true}, {"x", false}, {`\x1b`, true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Nothing that reaches a terminal through Line or Text is a control or format character,
// whatever the input: every byte value and a sample of hidden runes.
func TestNoHiddenCharacterSurvives(t *testing.T) {
	var in strings.Builder
	for b := range 256 {
		in.WriteByte(byte(b))
	}
	for _, r := range []rune{0x85, 0x9b, 0x200b, 0x200d, 0x202e, 0x2066, 0x2069, 0xfeff, 0xe0041, 0x2028, 0x115f, 0xfe0f} {
		in.WriteRune(r)
	}
	for _, show := range []func(string) string{Line, Text} {
		out := show(in.String())
		if !utf8.ValidString(out) {
			t.Fatalf("output is not valid UTF-8: %q", out)
		}
		for _, r := range out {
			if r == '\n' || r == '\t' {
				continue
			}
			if r < 0x20 || r == 0x7f || hidden(r) {
				t.Errorf("%U reached the output: %q", r, out)
			}
		}
	}
}

func TestWriterMatchesStringAcrossWrites(t *testing.T) {
	o := Options{Multiline: true, MaxLine: 8}
	in := "héllo \x1b]52;c;eA==\x07 wörld 日本語\n" + strings.Repeat("z", 20) + "\n\u202eend\xe6\x97"
	want := o.String(in)
	for _, chunk := range []int{1, 2, 3, 5, 64} {
		var out bytes.Buffer
		w := o.NewWriter(&out)
		for data := []byte(in); len(data) > 0; {
			n := min(chunk, len(data))
			if m, err := w.Write(data[:n]); err != nil || m != n {
				t.Fatalf("chunk %d: Write = %d, %v", chunk, m, err)
			}
			data = data[n:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, out.String()); diff != "" {
			t.Errorf("chunks of %d bytes (-String +Writer):\n%s", chunk, diff)
		}
	}
}

// BenchmarkText: a 1 MiB log of ordinary text with an escape sequence per line.
func BenchmarkText(b *testing.B) {
	line := "2026-07-01T10:00:00Z INFO fetched https://example.com/a/b?c=d in 12ms \x1b[32mok\x1b[0m\n"
	log := strings.Repeat(line, (1<<20)/len(line))
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		_ = Text(log)
	}
}

// BenchmarkLinePlain: the common case, a short printable field.
func BenchmarkLinePlain(b *testing.B) {
	for b.Loop() {
		_ = Line("review-42")
	}
}

// FuzzShown: whatever the input, what is shown is valid UTF-8 without a control, format
// or other hidden character (newline and tab kept by Text), and a Writer fed it in two
// writes shows the same.
func FuzzShown(f *testing.F) {
	for _, s := range []string{"", "plain", "a\x1b]52;c;x\x07\n\u202eb", "\xff\xe6\x97", "日本\ufe0f\ufe0f", strings.Repeat("x", 100)} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, split int) {
		o := Options{Multiline: true, MaxLine: 16}
		for _, out := range []string{Line(s), Text(s), o.String(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8 shown for %q: %q", s, out)
			}
			for _, r := range out {
				if r != '\n' && r != '\t' && (r < 0x20 || r == 0x7f || hidden(r)) {
					t.Fatalf("%U shown for %q: %q", r, s, out)
				}
			}
		}
		split = min(max(split, 0), len(s))
		var b bytes.Buffer
		w := o.NewWriter(&b)
		_, _ = w.Write([]byte(s[:split]))
		_, _ = w.Write([]byte(s[split:]))
		_ = w.Close()
		if b.String() != o.String(s) {
			t.Fatalf("Writer %q, String %q", b.String(), o.String(s))
		}
	})
}
