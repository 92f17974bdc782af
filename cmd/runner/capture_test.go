package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestHeadWriter(t *testing.T) {
	for _, tc := range []struct {
		limit  int
		writes []string
		kept   string
		trunc  bool
	}{
		{10, []string{"abc", "def"}, "abcdef", false},
		{4, []string{"ab", "cdef", "gh"}, "abcd", true},
		{0, []string{"x"}, "", true},
		{4, []string{"abc\xc3\xa9"}, "abc", true},               // cut inside é: dropped
		{5, []string{"abc\xc3\xa9"}, "abc\xc3\xa9", false},      // fits exactly
		{3, []string{"\xff\xfe\xc3\xa9"}, "\xff\xfe\xc3", true}, // not text: kept as is
		{4, []string{"ab\xe2\x82\xac"}, "ab", true},             // cut inside €
	} {
		h := &headWriter{limit: tc.limit}
		var total int
		for _, w := range tc.writes {
			if n, err := h.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			total += len(w)
		}
		if string(h.kept()) != tc.kept || h.truncated() != tc.trunc || h.total != int64(total) {
			t.Errorf("%+v: kept %q truncated %v total %d", tc, h.kept(), h.truncated(), h.total)
		}
	}
}

func TestTailWriter(t *testing.T) {
	var pass bytes.Buffer
	tw := &tailWriter{limit: 8, pass: &pass}
	in := []string{"hello ", "world", strings.Repeat("z", 20), "tail\xc3\xa9!"}
	for _, w := range in {
		_, _ = tw.Write([]byte(w))
	}
	if got := tw.tail(); got != "ztailé!" {
		t.Fatalf("tail %q", got)
	}
	if pass.String() != strings.Join(in, "") || tw.total != int64(pass.Len()) {
		t.Fatalf("passthrough %q total %d", pass.String(), tw.total)
	}
	// A character cut at the start is dropped; invalid bytes are replaced.
	tw = &tailWriter{limit: 4, pass: &bytes.Buffer{}}
	_, _ = tw.Write([]byte("x\xe2\x82\xacab"))
	if got := tw.tail(); got != "ab" {
		t.Fatalf("tail %q", got)
	}
	tw = &tailWriter{limit: 4, pass: &bytes.Buffer{}}
	_, _ = tw.Write([]byte("a\xffb"))
	if got := tw.tail(); got != "a\uFFFDb" {
		t.Fatalf("tail %q", got)
	}
	tw = &tailWriter{limit: 0, pass: &bytes.Buffer{}}
	_, _ = tw.Write([]byte("abc"))
	if tw.tail() != "" || tw.total != 3 {
		t.Fatal("zero limit keeps bytes")
	}
}
