package frame

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func seedFrames() []Frame {
	small := baseFrame()
	small.SetStdout([]byte("hello\n"))
	compressible := baseFrame()
	compressible.SetStdout(make([]byte, 10000))
	return []Frame{{}, small, compressible, bigFrame()}
}

// FuzzDecodeTermination: whatever body a (signing) runner put in a termination
// message, decoding it is bounded and never panics, and a frame that decodes
// re-encodes to one that decodes to the same frame.
func FuzzDecodeTermination(f *testing.F) {
	for _, fr := range seedFrames() {
		term, _, err := Encoder{}.Encode(fr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(term))
	}
	f.Add(`{"v":1,"stdoutB64":"/w=="}`)
	f.Add(CompressedPrefix + "H4sIAAAAAAAA/w==")
	f.Add(`{"v":1,"logBytes":5}`)
	f.Add("not a frame")
	f.Fuzz(func(t *testing.T, body string) {
		got, needLog, err := testDec.DecodeTermination(signed(body))
		if err != nil {
			return
		}
		if needLog != got.InLog {
			t.Fatalf("needLog %v, InLog %v", needLog, got.InLog)
		}
		if got.InLog {
			_, _ = testDec.DecodeLog([]byte(body), got)
			return
		}
		term, block, err := testEnc.Encode(got)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if block != nil {
			return
		}
		again, _, err := testDec.DecodeTermination(string(term))
		if err != nil {
			t.Fatalf("decode re-encoded: %v", err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Fatalf("mismatch:\n%s", diff)
		}
	})
}

// FuzzForgedTermination: a message the runner did not sign never verifies.
// The seeds are genuine signed messages (and their unsigned bodies); the fuzzer
// mutates them, and only a message whose trimmed form is one of the genuine
// ones may decode.
func FuzzForgedTermination(f *testing.F) {
	genuine := map[string]bool{}
	for _, fr := range seedFrames() {
		term, _, err := testEnc.Encode(fr)
		if err != nil {
			f.Fatal(err)
		}
		genuine[string(term)] = true
		f.Add(string(term))
		f.Add(string(term[signatureLen:]))
	}
	f.Add(SignedPrefix + strings.Repeat("A", 43) + `:{"v":1,"stdout":"forged"}`)
	f.Fuzz(func(t *testing.T, msg string) {
		_, _, err := testDec.DecodeTermination(msg)
		if _, verr := verify(testKey, strings.TrimSpace(msg)); verr == nil && !genuine[strings.TrimSpace(msg)] {
			t.Fatalf("forged message verifies: %q", msg)
		}
		if err == nil && !genuine[strings.TrimSpace(msg)] {
			t.Fatalf("forged message decodes: %q", msg)
		}
	})
}
