package frame

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func FuzzDecodeTermination(f *testing.F) {
	small := baseFrame()
	small.SetStdout([]byte("hello\n"))
	compressible := baseFrame()
	compressible.SetStdout(make([]byte, 10000))
	for _, fr := range []Frame{{}, small, compressible, bigFrame()} {
		term, _, err := Encode(fr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(term))
	}
	f.Add(`{"v":1,"stdoutB64":"/w=="}`)
	f.Add(CompressedPrefix + "H4sIAAAAAAAA/w==")
	f.Add(`{"v":1,"logBytes":5}`)
	f.Add("not a frame")
	f.Fuzz(func(t *testing.T, msg string) {
		got, needLog, err := DecodeTermination(msg)
		if err != nil {
			return
		}
		if needLog != got.InLog {
			t.Fatalf("needLog %v, InLog %v", needLog, got.InLog)
		}
		if got.InLog {
			_, _ = DecodeLog([]byte(msg), got)
			return
		}
		// A frame that decodes re-encodes to one that decodes to the same frame.
		term, block, err := Encode(got)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if block != nil {
			return
		}
		again, _, err := DecodeTermination(string(term))
		if err != nil {
			t.Fatalf("decode re-encoded: %v", err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Fatalf("mismatch:\n%s", diff)
		}
	})
}
