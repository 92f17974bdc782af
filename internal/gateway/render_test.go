package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// What a hostile tool writes reaches the model's text escaped, never raw.
func TestErrorTextEscapesWhatTheToolWrote(t *testing.T) {
	cases := []struct {
		name    string
		message string
		content string
		want    string
	}{{
		name:    "ANSI colours, CR and a clear-screen in stdout; newlines and tabs kept",
		message: "the command exited with code 1",
		content: `{"exitCode":1,"stdout":"\u001b[31mFAIL\u001b[0m\tTestX\r\nok\n\u001b[2J"}`,
		want:    "the command exited with code 1\n\nexitCode: 1\nstdout (28 bytes):\n" + `\x1b[31mFAIL\x1b[0m` + "\tTestX" + `\r` + "\nok\n" + `\x1b[2J`,
	}, {
		name:    "a one-line field: tab, NUL and bidi overrides escaped",
		message: "failed",
		content: `{"stderr":"a\tb \u202eetadpu\u0000"}`,
		want:    "failed\n\nstderr: " + `a\tb \u202eetadpu\x00`,
	}, {
		name:    "a field with a CR is a block",
		message: "failed",
		content: `{"stderr":"10%\r20%"}`,
		want:    "failed\n\nstderr (7 bytes):\n" + `10%\r20%`,
	}, {
		name:    "a field name with an escape sequence",
		message: "failed",
		content: `{"\u001b]0;pwned\u0007":1}`,
		want:    "failed\n\n" + `\x1b]0;pwned\x07: 1`,
	}, {
		name:    "the message itself (the tool's error field)",
		message: "boom\u001b[2J\u2066",
		content: `{"error":"boom\u001b[2J\u2066","exitCode":2}`,
		want:    `boom\x1b[2J\u2066` + "\n\nexitCode: 2",
	}, {
		name:    "a non-object error content",
		message: "the tool exited with code 1",
		content: `"out\u001b[Kput"`,
		want:    "the tool exited with code 1\n\n" + `out\x1b[Kput`,
	}, {
		name:    "nested JSON values: JSON escapes, still the same JSON",
		message: "failed",
		content: `{"details":{"file":"a\u202eb\u007f\ud800\udc00\udb40\udc41"}}`,
		want:    "failed\n\ndetails: " + `{"file":"a\u202eb\u007f\ud800\udc00\udb40\udc41"}`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := errorText(&callView{message: tc.message, content: []byte(tc.content)})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errorText (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJSONTextIsTheSameJSONValue(t *testing.T) {
	// Raw characters, as the API server sends them (it escapes only controls and U+2028/9).
	in := "{\"a\":\"x\u202ey\",\"b\":[\"\x7f\",\"\ufeff\",\"😀\",\"\U000E0041\",\"é\"],\"c\":\"\\u001b\"}"
	got := jsonText([]byte(in))
	for _, r := range got {
		if r != '😀' && r != 'é' && (r < 0x20 || r >= 0x7f) {
			t.Errorf("jsonText(%s) = %s holds %U raw", in, got, r)
		}
	}
	var want, back any
	if err := json.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Fatalf("jsonText = %s is no JSON: %v", got, err)
	}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("value (-want +got):\n%s", diff)
	}
}

// A long stream keeps its head and its tail, on character boundaries, and says what it
// left out; the whole text stays bounded however many fields there are.
func TestErrorTextIsBounded(t *testing.T) {
	stdout := strings.Repeat("é", maxFieldText) + "LAST LINE" // 2 bytes a character
	raw, err := json.Marshal(map[string]any{"exitCode": 1, "stdout": stdout})
	if err != nil {
		t.Fatal(err)
	}
	got := errorText(&callView{message: "failed", content: raw})
	if !utf8.ValidString(got) {
		t.Fatal("the text is not valid UTF-8: a character was cut")
	}
	if !strings.HasSuffix(got, "LAST LINE") || !strings.Contains(got, fmt.Sprintf("stdout (%d bytes):\néé", len(stdout))) {
		t.Errorf("the text lacks the head or the tail of stdout: %.80q … %q", got, got[len(got)-40:])
	}
	var left int
	if i := strings.Index(got, "\n[… "); i < 0 {
		t.Error("no marker for the bytes left out")
	} else if _, err := fmt.Sscanf(got[i:], "\n[… %d bytes left out …]", &left); err != nil || left < len(stdout)-maxFieldText || left > len(stdout)-maxFieldText+2 {
		t.Errorf("the marker says %d bytes left out (%v), want %d on character boundaries", left, err, len(stdout)-maxFieldText)
	}
	if len(got) > maxFieldText+200 {
		t.Errorf("text is %d bytes, want about %d", len(got), maxFieldText)
	}

	many := map[string]string{}
	for i := range 10 {
		many[fmt.Sprintf("f%d", i)] = strings.Repeat("x\n", maxFieldText)
	}
	raw, err = json.Marshal(many)
	if err != nil {
		t.Fatal(err)
	}
	got = errorText(&callView{message: "failed", content: raw})
	if len(got) > maxFieldsText+maxInline {
		t.Errorf("text of 10 long fields is %d bytes, over the bound %d", len(got), maxFieldsText)
	}
	if !strings.HasSuffix(got, "[8 more fields left out]") {
		t.Errorf("text ends %q, want the fields left out counted", got[len(got)-60:])
	}
}
