package frame

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzEncodeDecode: whatever an honest runner reports (any exit code, signal, reason,
// error, stdout of any bytes up to the call's output limit, truncated or not, a stderr
// tail up to its limit, any marker), Encode gives a signed termination message within
// the kubelet's 4096 bytes — plus a log block when the frame does not fit even
// compressed — the JSON frame stays within MaxFrameBytes of the call's limit, and a
// Decoder with that limit and the attempt's key gives back exactly the frame (through
// the simulated container log, read with LogReadBounds, when needed). A decoder with
// another key, and any message with one byte changed, are refused.
func FuzzEncodeDecode(f *testing.F) {
	f.Add(0, "", "", "", []byte("hello\n"), false, int64(6), "", int64(12), "", uint32(1<<20), uint16(0), uint16(0), byte(1))
	f.Add(137, "SIGKILL", "", "", []byte(`{"a":1}`), true, int64(5<<20), "killed\n", int64(30000), "custom.marker_1", uint32(64<<10), uint16(20000), uint16(17), byte(0x80))
	f.Add(125, "", ReasonStartError, strings.Repeat("é", 400), []byte{0xff, 0xfe, 0}, false, int64(3), strings.Repeat("\x01", 300), int64(0), "", uint32(10), uint16(0), uint16(3), byte(0x20))
	f.Add(2, "", "", "", []byte(strings.Repeat("all work and no play\n", 300)), false, int64(6300), "warning\u2028", int64(1), "m", uint32(0), uint16(9000), uint16(4000), byte(0xff))
	f.Fuzz(func(t *testing.T, exit int, signal, reason, errText string, stdout []byte, truncated bool, total int64,
		stderr string, durationMs int64, marker string, limit uint32, noise, flipAt uint16, flip byte) {
		maxOutput := int64(limit % (MaxOutputLimit + 1)) // 0: MaxOutputLimit
		fr := honestFrame(exit, signal, reason, errText, stdout, truncated, total, stderr, durationMs, maxOutput, noise)
		enc := Encoder{Key: testKey, Marker: marker}
		term, block, err := enc.Encode(fr)
		if err != nil {
			if marker != "" && !ValidMarker(marker) {
				return
			}
			t.Fatalf("Encode of an honest frame: %v", err)
		}
		if len(term) > MaxTerminationMessage {
			t.Fatalf("termination message of %d bytes", len(term))
		}
		fr.V = Version
		js, _ := marshal(fr)
		if int64(len(js)) > MaxFrameBytes(maxOutput) {
			t.Fatalf("frame of %d bytes over MaxFrameBytes(%d) = %d", len(js), maxOutput, MaxFrameBytes(maxOutput))
		}
		dec := Decoder{Key: testKey, MaxOutput: maxOutput}
		got, needLog, err := dec.DecodeTermination(string(term))
		if err != nil || needLog != (block != nil) {
			t.Fatalf("DecodeTermination: %v (needLog %v, block %v)", err, needLog, block != nil)
		}
		if needLog {
			tailLines, limitBytes := dec.LogReadBounds(got)
			if got, err = dec.DecodeLog(containerLog(block, tailLines, limitBytes), got); err != nil {
				t.Fatalf("DecodeLog: %v", err)
			}
		}
		if diff := cmp.Diff(fr, got); diff != "" {
			t.Fatalf("round trip mismatch (-want +got):\n%.3000s", diff)
		}
		if data, err := got.StdoutData(); err != nil || int64(len(data)) > dec.maxOutput() {
			t.Fatalf("stdout of %d bytes over the limit %d (%v)", len(data), dec.maxOutput(), err)
		}
		checkRefused(t, dec, term, int(flipAt), flip)
	})
}

// honestFrame is what a runner with the call's limit writes: stdout cut to the limit
// (with noise pseudo-random bytes appended, to reach the log block), the stderr tail and
// error cut to theirs and made valid UTF-8 as the runner does, counts not negative.
func honestFrame(exit int, signal, reason, errText string, stdout []byte, truncated bool, total int64,
	stderr string, durationMs, maxOutput int64, noise uint16) Frame {
	limit := maxOutput
	if limit <= 0 {
		limit = MaxOutputLimit
	}
	out := append(bytes.Clone(stdout), randBytes(int(noise), uint64(len(stdout)))...)
	out = out[:min(int64(len(out)), limit)]
	fr := Frame{ExitCode: exit, Signal: validPrefix(signal, 32), Reason: validPrefix(reason, 64),
		Error: validPrefix(errText, MaxErrorLen), ArgsDigest: DigestOf(stdout), DurationMs: max(durationMs, 0),
		StdoutBytes: max(total, int64(len(out))), Truncated: truncated,
		StderrTail: validPrefix(stderr, MaxStderrTail), StderrBytes: int64(len(stderr))}
	fr.SetStdout(out)
	return fr
}

// validPrefix cuts s to n bytes and makes it valid UTF-8 (each invalid byte U+FFFD, as
// the runner's capture does, then cut again at a rune boundary).
func validPrefix(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	for len(s) > n {
		s = strings.ToValidUTF8(s[:n], "")
	}
	return s
}

func (d Decoder) maxOutput() int64 {
	if d.MaxOutput <= 0 || d.MaxOutput > MaxOutputLimit {
		return MaxOutputLimit
	}
	return d.MaxOutput
}

// containerLog is the block at the end of a container log with stderr lines before,
// inside and after it, read as pods/log does with the pointer's bounds.
func containerLog(block []byte, tailLines, limitBytes int64) []byte {
	var log bytes.Buffer
	log.WriteString("stderr before\npartial line")
	for i, l := range bytes.SplitAfter(block, []byte{'\n'}) {
		log.Write(l)
		if i == 3 {
			log.WriteString("interleaved stderr\n")
		}
	}
	log.WriteString("late stderr\n")
	lines := bytes.SplitAfter(log.Bytes(), []byte{'\n'})
	if int64(len(lines)) > tailLines {
		lines = lines[int64(len(lines))-tailLines:]
	}
	out := bytes.Join(lines, nil)
	return out[:min(int64(len(out)), limitBytes)]
}

// checkRefused: another key never verifies the message, and neither does the message
// with the byte at flipAt changed.
func checkRefused(t *testing.T, dec Decoder, term []byte, flipAt int, flip byte) {
	t.Helper()
	other := Decoder{Key: bytes.Repeat([]byte{7}, KeySize), MaxOutput: dec.MaxOutput}
	if _, _, err := other.DecodeTermination(string(term)); !errors.Is(err, ErrSignature) {
		t.Fatalf("a message decodes under another key: %v", err)
	}
	if flip == 0 {
		flip = 1
	}
	forged := bytes.Clone(term)
	forged[flipAt%len(forged)] ^= flip
	if _, _, err := dec.DecodeTermination(string(forged)); err == nil {
		t.Fatalf("a message with byte %d changed decodes: %q", flipAt%len(forged), forged)
	}
}
