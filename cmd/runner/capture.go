package main

import (
	"io"
	"strings"
	"unicode/utf8"
)

// headWriter keeps the first limit bytes written to it and counts them all. It
// never fails, so that the tool is never blocked on its stdout.
type headWriter struct {
	limit int
	buf   []byte
	total int64
}

func (h *headWriter) Write(p []byte) (int, error) {
	h.total += int64(len(p))
	if room := h.limit - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (h *headWriter) truncated() bool { return h.total > int64(len(h.buf)) }

// kept returns the kept bytes. When stdout was truncated in the middle of a
// UTF-8 character of otherwise valid text, the partial character is dropped so
// that the text is still reported as UTF-8.
func (h *headWriter) kept() []byte {
	if !h.truncated() {
		return h.buf
	}
	return trimPartialRune(h.buf)
}

func trimPartialRune(b []byte) []byte {
	for k := 1; k < utf8.UTFMax && k <= len(b); k++ {
		if !utf8.RuneStart(b[len(b)-k]) {
			continue
		}
		if !utf8.FullRune(b[len(b)-k:]) && utf8.Valid(b[:len(b)-k]) {
			return b[:len(b)-k]
		}
		break
	}
	return b
}

// tailWriter copies everything to pass (the runner's stderr, ignoring its
// errors), keeps the last limit bytes and counts them all.
type tailWriter struct {
	limit int
	pass  io.Writer
	buf   []byte
	total int64
}

func (t *tailWriter) Write(p []byte) (int, error) {
	_, _ = t.pass.Write(p)
	t.total += int64(len(p))
	if len(p) >= t.limit {
		t.buf = append(t.buf[:0], p[len(p)-t.limit:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.limit {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.limit:]...)
	}
	return len(p), nil
}

// tail returns the kept tail as valid UTF-8: a character cut at the start is
// dropped and invalid bytes become U+FFFD.
func (t *tailWriter) tail() string {
	b := t.buf[max(0, len(t.buf)-t.limit):]
	if t.total > int64(len(b)) {
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
