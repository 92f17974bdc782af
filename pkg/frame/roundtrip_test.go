package frame

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The tests sign with testKey and decode with the largest output limit.
var (
	testKey = []byte("0123456789abcdef0123456789abcdef")
	testEnc = Encoder{Key: testKey}
	testDec = Decoder{Key: testKey, MaxOutput: MaxOutputLimit}
)

// room is what an unsigned body may take in a signed termination message.
var room = MaxTerminationMessage - signatureLen

// kind of delivery chosen by Encode.
const (
	plain = "plain"
	tgz   = "tgz"
	inLog = "log"
)

func kindOf(t *testing.T, term, block []byte) string {
	t.Helper()
	if len(term) > MaxTerminationMessage {
		t.Fatalf("termination message is %d bytes", len(term))
	}
	switch {
	case block != nil:
		return inLog
	case bytes.HasPrefix(term[signatureLen:], []byte(CompressedPrefix)):
		return tgz
	default:
		return plain
	}
}

// roundTrip encodes f, decodes it back (through a simulated container log when
// needed) and checks the result equals f.
func roundTrip(t *testing.T, enc Encoder, f Frame) string {
	t.Helper()
	term, block, err := enc.Encode(f)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	kind := kindOf(t, term, block)
	got, needLog, err := testDec.DecodeTermination(string(term))
	if err != nil {
		t.Fatalf("DecodeTermination: %v", err)
	}
	if needLog != (kind == inLog) {
		t.Fatalf("needLog = %v for %s", needLog, kind)
	}
	if needLog {
		got = decodeFromLog(t, got, block)
	}
	f.V = Version
	if diff := cmp.Diff(f, got); diff != "" {
		t.Fatalf("round trip (%s) mismatch (-want +got):\n%.2000s", kind, diff)
	}
	return kind
}

// decodeFromLog simulates a container log: stderr before the block, a stderr
// line interleaved inside it, a line after it, and reads it with the pointer's
// bounds.
func decodeFromLog(t *testing.T, ptr Frame, block []byte) Frame {
	t.Helper()
	if ptr.LogBytes != int64(len(block)-1) || ptr.LogLines != int64(bytes.Count(block, []byte{'\n'})-1) {
		t.Fatalf("pointer sizes %d/%d for block of %d bytes", ptr.LogBytes, ptr.LogLines, len(block))
	}
	lines := bytes.SplitAfter(block, []byte{'\n'})
	var log bytes.Buffer
	log.WriteString("some stderr\nno newline at end")
	for i, l := range lines {
		log.Write(l)
		if i == 2 {
			log.WriteString("interleaved stderr QUJD\n")
		}
	}
	log.WriteString("late stderr\n")
	got, err := testDec.DecodeLog(tail(log.Bytes(), ptr), ptr)
	if err != nil {
		t.Fatalf("DecodeLog: %v", err)
	}
	return got
}

// tail returns what pods/log returns for the pointer's read bounds.
func tail(log []byte, ptr Frame) []byte {
	tailLines, limitBytes := testDec.LogReadBounds(ptr)
	lines := bytes.SplitAfter(log, []byte{'\n'})
	if int64(len(lines)) > tailLines {
		lines = lines[int64(len(lines))-tailLines:]
	}
	out := bytes.Join(lines, nil)
	return out[:min(int64(len(out)), limitBytes)]
}

func randBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func baseFrame() Frame {
	return Frame{ExitCode: 0, ArgsDigest: DigestOf([]byte(`{"a":1}`)), DurationMs: 12}
}

func TestRoundTripEmpty(t *testing.T) {
	if k := roundTrip(t, Encoder{Key: testKey}, Frame{}); k != plain {
		t.Fatalf("empty frame delivered as %s", k)
	}
}

// stdoutForSize returns a frame whose plain JSON is exactly n bytes, with
// stdout made from fill.
func frameOfSize(t *testing.T, n int, fill string) Frame {
	t.Helper()
	f := baseFrame()
	f.V, f.StdoutBytes = Version, int64(n) // same digits as the final count
	js, _ := marshal(f)
	over := len(`,"stdout":""`)
	f.SetStdout([]byte(fill[:n-len(js)-over]))
	if js, _ := marshal(f); len(js) != n {
		t.Fatalf("built frame of %d bytes, want %d", len(js), n)
	}
	return f
}

func TestRoundTripTerminationBoundary(t *testing.T) {
	random := base64.StdEncoding.EncodeToString(randBytes(8192, 1))
	for _, tc := range []struct {
		size int
		fill string
		want string
	}{
		{room, strings.Repeat("a", 8192), plain},
		{room, random, plain},
		{room + 1, strings.Repeat("a", 8192), tgz},
		{room + 1, random, inLog},
	} {
		if k := roundTrip(t, Encoder{Key: testKey}, frameOfSize(t, tc.size, tc.fill)); k != tc.want {
			t.Errorf("frame of %d bytes delivered as %s, want %s", tc.size, k, tc.want)
		}
	}
}

func TestRoundTripCompressible100KiB(t *testing.T) {
	f := baseFrame()
	out := []byte(strings.Repeat(`{"line":"all work and no play"}`+"\n", 100<<10/32))
	f.SetStdout(out)
	f.StdoutBytes = int64(len(out))
	f.StderrTail = strings.Repeat("warning: x\n", 300)
	if k := roundTrip(t, Encoder{Key: testKey}, f); k != tgz {
		t.Fatalf("compressible 100 KiB delivered as %s", k)
	}
}

func TestRoundTripIncompressible2MiB(t *testing.T) {
	out := randBytes(2<<20, 2)
	f := baseFrame()
	f.ExitCode, f.Signal = 137, "SIGKILL"
	f.SetStdout(out)
	f.StdoutBytes, f.Truncated, f.Redactions = 5<<20, true, 4
	for _, enc := range []Encoder{{Key: testKey}, {Key: testKey, Marker: "custom.marker_1"}} {
		if k := roundTrip(t, enc, f); k != inLog {
			t.Fatalf("incompressible 2 MiB delivered as %s", k)
		}
	}
	term, block, _ := testEnc.Encode(f)
	ptr, _, _ := testDec.DecodeTermination(string(term))
	got, err := testDec.DecodeLog(block, ptr)
	if err != nil {
		t.Fatal(err)
	}
	data, err := got.StdoutData()
	if err != nil || !bytes.Equal(data, out) || got.StdoutIsUTF8() {
		t.Fatalf("stdout not recovered exactly (err %v, utf8 %v)", err, got.StdoutIsUTF8())
	}
	if ptr.ExitCode != 137 || ptr.Signal != "SIGKILL" || !ptr.Truncated || ptr.StdoutBytes != 5<<20 || ptr.Redactions != 4 {
		t.Fatalf("pointer summary wrong: %+v", ptr)
	}
}

func TestPointerErrorShortened(t *testing.T) {
	f := baseFrame()
	f.SetStdout(randBytes(64<<10, 3))
	f.Reason, f.Error = ReasonStartError, strings.Repeat("é", 4000)
	term, block, err := testEnc.Encode(f)
	if err != nil || block == nil {
		t.Fatalf("Encode: %v (block %v)", err, block != nil)
	}
	ptr, _, err := testDec.DecodeTermination(string(term))
	if err != nil || len(ptr.Error) >= len(f.Error) || ptr.Reason != ReasonStartError {
		t.Fatalf("pointer %q... (%v)", ptr.Error[:10], err)
	}
	if got, err := testDec.DecodeLog(block, ptr); err != nil || got.Error != f.Error {
		t.Fatalf("full error not in log block: %v", err)
	}
}
