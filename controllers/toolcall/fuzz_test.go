package toolcall

import (
	"maps"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/controllers/internal/bounds"
	"github.com/toolgate/toolgate/controllers/internal/events"
	"github.com/toolgate/toolgate/pipeline"
)

// FuzzBounded: a message cut to its field's limit fits it, says that it was cut and how
// long it was in full, is valid UTF-8, keeps as much of a valid message as fits, and is
// the message itself when it fits; stage 8 (pipeline.StoreResult) cuts a result's error
// (and its content when it is the same text) without changing the caller's meta.
func FuzzBounded(f *testing.F) {
	for _, s := range []string{"hello", strings.Repeat("é", 600), strings.Repeat("\xff", 700), "日本" + strings.Repeat("語", 400)} {
		f.Add(s, uint16(0), uint8(0), true)
		f.Add(s, uint16(40), uint8(3), false)
	}
	f.Fuzz(func(t *testing.T, s string, repeat uint16, which uint8, sameContent bool) {
		s = strings.Repeat(s, 1+int(repeat%128))
		limit := []int{bounds.MaxConditionMessage, pipeline.MaxResultErrorBytes, events.MaxNote, 64 + int(repeat)%4096}[which%4]
		out, cut := pipeline.Bounded(s, limit)
		if cut != (len(s) > limit) || len(out) > limit || !cut && out != s {
			t.Fatalf("bounded(%d bytes, %d) = %d bytes, cut %v", len(s), limit, len(out), cut)
		}
		if cut {
			note := "… [truncated; " + strconv.Itoa(len(s)) + " bytes in full]"
			kept, ok := strings.CutSuffix(out, note)
			if !ok || !utf8.ValidString(out) {
				t.Fatalf("a cut message must end with %q and be UTF-8: %q", note, out[max(0, len(out)-80):])
			}
			if utf8.ValidString(s) && (!strings.HasPrefix(s, kept) || len(kept) < limit-len(note)-(utf8.UTFMax-1)) {
				t.Fatalf("bounded kept %d bytes of a valid message, limit %d", len(kept), limit)
			}
		}
		checkBoundResult(t, s, sameContent)
	})
}

func checkBoundResult(t *testing.T, msg string, sameContent bool) {
	t.Helper()
	meta := map[string]string{pipeline.MetaAttempt: "1"}
	in := pipeline.Result{IsError: true, Reason: pipeline.ReasonNonZeroExit, Error: msg, Content: map[string]any{"a": "b"}, Meta: meta}
	if sameContent {
		in.Content = msg
	}
	stored, err := pipeline.StoreResult(in)
	if err != nil {
		if utf8.ValidString(msg) {
			t.Fatalf("a valid result could not be stored: %v", err)
		}
		return // JSON cannot carry invalid UTF-8: the result is unrepresentable
	}
	out := stored.Result
	if len(out.Error) > pipeline.MaxResultErrorBytes || !maps.Equal(meta, map[string]string{pipeline.MetaAttempt: "1"}) {
		t.Fatalf("error of %d bytes, caller's meta %v", len(out.Error), meta)
	}
	cut := len(msg) > pipeline.MaxResultErrorBytes
	if cut != (out.Meta[pipeline.MetaMessageBytes] == strconv.Itoa(len(msg))) || !cut && out.Error != msg {
		t.Fatalf("cut %v, meta %v", cut, out.Meta)
	}
	if c, ok := out.Content.(string); sameContent && (!ok || c != out.Error) {
		t.Fatalf("content not cut with the error")
	}
}
