package frame

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func TestSetStdout(t *testing.T) {
	for _, tc := range []struct {
		in       []byte
		utf8     bool
		b64field bool
	}{
		{nil, true, false},
		{[]byte("héllo\n"), true, false},
		{[]byte{0xff, 0xfe, 'a'}, false, true},
		{[]byte("ok\x00nul"), true, true}, // escaped it would be longer than base64
		{[]byte("hello, world\x00"), true, false},
	} {
		var f Frame
		f.SetStdout(tc.in)
		got, err := f.StdoutData()
		if err != nil || !bytes.Equal(got, tc.in) || f.StdoutIsUTF8() != tc.utf8 || (f.StdoutB64 != "") != tc.b64field {
			t.Errorf("SetStdout(%q): got %q err %v utf8 %v b64 %q", tc.in, got, err, f.StdoutIsUTF8(), f.StdoutB64)
		}
	}
}

// signed signs an unsigned termination message body with testKey, as a runner would.
func signed(body string) string { return string(sign(testKey, []byte(body))) }

func gzString(s string) string {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = w.Write([]byte(s))
	w.Close()
	return CompressedPrefix + base64.StdEncoding.EncodeToString(b.Bytes())
}

func TestDecodeTerminationErrors(t *testing.T) {
	good, _, _ := Encoder{}.Encode(Frame{Stdout: "x"})
	goodSigned := signed(string(good))
	flipped := []byte(goodSigned)
	flipped[len(flipped)-3] ^= 1
	for name, tc := range map[string]struct {
		msg  string
		want error
	}{
		"empty":              {"", ErrUnsigned},
		"text":               {"panic: runtime error", ErrUnsigned},
		"unsigned frame":     {string(good), ErrUnsigned},
		"unsigned tgz":       {gzString(string(good)), ErrUnsigned},
		"other key":          {string(sign([]byte("another key of thirty-two bytes!"), good)), ErrSignature},
		"flipped body byte":  {string(flipped), ErrSignature},
		"short signature":    {SignedPrefix + "abc:" + string(good), ErrSignature},
		"bad signature b64":  {SignedPrefix + strings.Repeat("*", 43) + ":" + string(good), ErrSignature},
		"no separator":       {SignedPrefix + strings.Repeat("A", 43) + string(good), ErrSignature},
		"too long":           {goodSigned + strings.Repeat(" ", MaxTerminationMessage), ErrTooLarge},
		"signed text":        {signed("panic: runtime error"), ErrMalformed},
		"truncated json":     {signed(string(good[:len(good)-3])), ErrMalformed},
		"trailing":           {signed(string(good) + "{}"), ErrMalformed},
		"no version":         {signed(`{"exitCode":0}`), ErrVersion},
		"version 2":          {signed(`{"v":2}`), ErrVersion},
		"null":               {signed(`{"v":1,"exitCode":"x"}`), ErrMalformed},
		"both stdout":        {signed(`{"v":1,"stdout":"a","stdoutB64":"YQ=="}`), ErrMalformed},
		"bad b64 stdout":     {signed(`{"v":1,"stdoutB64":"!!"}`), ErrMalformed},
		"negative":           {signed(`{"v":1,"stdoutBytes":-1}`), ErrMalformed},
		"redactions -1":      {signed(`{"v":1,"redactions":-1}`), ErrMalformed},
		"pointer no hash":    {signed(`{"v":1,"inLog":true,"logBytes":10,"logLines":3,"frameBytes":5}`), ErrMalformed},
		"pointer sizes":      {signed(`{"v":1,"inLog":true,"sha256":"sha256:` + strings.Repeat("a", 64) + `"}`), ErrMalformed},
		"pointer no frame":   {signed(`{"v":1,"inLog":true,"logBytes":10,"logLines":3,"sha256":"sha256:` + strings.Repeat("a", 64) + `"}`), ErrMalformed},
		"pointer fields":     {signed(`{"v":1,"sha256":"x"}`), ErrMalformed},
		"tgz bad b64":        {signed(CompressedPrefix + "***"), ErrMalformed},
		"tgz not gzip":       {signed(CompressedPrefix + "aGVsbG8="), ErrMalformed},
		"tgz bad json":       {signed(gzString("{nope")), ErrMalformed},
		"pointer huge frame": {signed(pointerJSON(60<<20, 100, 3)), ErrTooLarge},
		"pointer huge log":   {signed(pointerJSON(1000, 60<<20, 3)), ErrTooLarge},
		"pointer many lines": {signed(pointerJSON(1000, 2000, 1<<20)), ErrTooLarge},
	} {
		_, _, err := testDec.DecodeTermination(tc.msg)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
	if _, _, err := (Decoder{}).DecodeTermination(goodSigned); !errors.Is(err, ErrNoKey) {
		t.Errorf("no key: err = %v, want ErrNoKey", err)
	}
}

func pointerJSON(frameBytes, logBytes, logLines int64) string {
	return fmt.Sprintf(`{"v":1,"exitCode":0,"durationMs":1,"stdoutBytes":0,"inLog":true,"logBytes":%d,"logLines":%d,"frameBytes":%d,"sha256":"sha256:%s"}`,
		logBytes, logLines, frameBytes, strings.Repeat("a", 64))
}

// zerosGzip returns gzip(n zero bytes).
func zerosGzip(n int) []byte {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, len(zeros))
		_, _ = w.Write(zeros[:k])
		n -= k
	}
	w.Close()
	return b.Bytes()
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodeTerminationBomb: a signed compressed frame that inflates beyond what
// the call's output limit allows is refused, and decoding it costs no more than
// that bound, whatever the bomb would inflate to.
func TestDecodeTerminationBomb(t *testing.T) {
	gz := zerosGzip(2500 << 10)
	msg := signed(CompressedPrefix + base64.StdEncoding.EncodeToString(gz))
	if len(msg) > MaxTerminationMessage {
		t.Fatalf("bomb of %d bytes does not fit a termination message", len(msg))
	}
	for _, limit := range []int64{1000, 1 << 20} {
		dec := Decoder{Key: testKey, MaxOutput: limit}
		var err error
		n := allocated(func() { _, _, err = dec.DecodeTermination(msg) })
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("limit %d: err = %v, want ErrTooLarge", limit, err)
		}
		// A growing buffer allocates at most about 4 times what it ends holding.
		if bound := allocSlack * uint64(4*MaxFrameBytes(limit)+256<<10); n > bound || limit == 1000 && n >= 2500<<10 {
			t.Errorf("limit %d: decoding allocated %d bytes, bound %d", limit, n, bound)
		}
	}
}

// TestDecodeLogBomb: a block whose digest the signed pointer vouches for, but
// that inflates beyond the pointer's frame size, is refused within that size.
func TestDecodeLogBomb(t *testing.T) {
	gz := zerosGzip(60 << 20)
	sum := sha256.Sum256(gz)
	digest := hex.EncodeToString(sum[:])
	core, lines := logBlockCore(gz, DefaultMarker, digest[:nonceLen])
	dec := Decoder{Key: testKey, MaxOutput: 1 << 20}
	ptr := Frame{V: Version, InLog: true, FrameBytes: MaxFrameBytes(1 << 20), LogBytes: int64(len(core)), LogLines: lines,
		SHA256: DigestPrefix + digest}
	js, _ := marshal(ptr)
	got, needLog, err := dec.DecodeTermination(signed(string(js)))
	if err != nil || !needLog {
		t.Fatalf("pointer: %v (needLog %v)", err, needLog)
	}
	n := allocated(func() { _, err = dec.DecodeLog(core, got) })
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if bound := allocSlack * uint64(3*MaxFrameBytes(1<<20)+4*int64(len(core))); n > bound {
		t.Errorf("decoding allocated %d bytes, bound %d", n, bound)
	}
	if lines, limit := dec.LogReadBounds(Frame{InLog: true, FrameBytes: 60 << 20, LogBytes: 80 << 20, LogLines: 1 << 20}); limit > 4<<20 || lines > 40000 {
		t.Errorf("read bounds for a huge pointer: %d lines, %d bytes", lines, limit)
	}
}

// TestMaxFrameBytesHonest: the worst frame an honest runner writes for a limit
// (stdout that JSON escaping would blow up, a full stderr tail of control
// characters, a full error) fits MaxFrameBytes, and round-trips.
func TestMaxFrameBytesHonest(t *testing.T) {
	for _, limit := range []int{1, 1000, 1 << 20} {
		f := baseFrame()
		f.Reason, f.Error = ReasonStartError, strings.Repeat("\"", MaxErrorLen)
		f.StderrTail = strings.Repeat("\x01", MaxStderrTail)
		f.SetStdout(bytes.Repeat([]byte{0}, limit))
		f.StdoutBytes, f.Truncated = 1<<40, true
		js, err := marshal(f)
		if err != nil || int64(len(js)) > MaxFrameBytes(int64(limit)) {
			t.Fatalf("limit %d: frame of %d bytes > %d (%v)", limit, len(js), MaxFrameBytes(int64(limit)), err)
		}
		enc, dec := Encoder{Key: testKey}, Decoder{Key: testKey, MaxOutput: int64(limit)}
		term, block, err := enc.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		got, needLog, err := dec.DecodeTermination(string(term))
		if err == nil && needLog {
			got, err = dec.DecodeLog(block, got)
		}
		if err != nil || got.StderrTail != f.StderrTail {
			t.Fatalf("limit %d: %v", limit, err)
		}
	}
}

func bigFrame() Frame {
	f := baseFrame()
	f.SetStdout(randBytes(20000, 4))
	f.StdoutBytes = 20000
	return f
}

func TestDecodeLogErrors(t *testing.T) {
	term, block, err := testEnc.Encode(bigFrame())
	if err != nil || block == nil {
		t.Fatalf("want log block: %v", err)
	}
	ptr, _, _ := testDec.DecodeTermination(string(term))
	flip := bytes.Clone(block)
	i := bytes.LastIndex(flip, []byte("\n--")) - 5 // inside the last data line
	flip[i] ^= 'A' ^ 'B'
	otherPtr := ptr
	otherPtr.ExitCode = 3
	otherRedactions := ptr
	otherRedactions.Redactions++
	badMarker := ptr
	badMarker.Marker = "bad marker"
	for name, tc := range map[string]struct {
		log  []byte
		ptr  Frame
		want error
	}{
		"no block":        {[]byte("just stderr\n"), ptr, ErrNoBlock},
		"cut end":         {block[:len(block)-20], ptr, ErrNoBlock},
		"cut begin":       {block[40:], ptr, ErrNoBlock},
		"missing line":    {dropLine(block, 3), ptr, ErrMalformed},
		"flipped byte":    {flip, ptr, ErrMalformed},
		"not a pointer":   {block, Frame{V: 1}, ErrMalformed},
		"disagrees":       {block, otherPtr, ErrMalformed},
		"redactions":      {block, otherRedactions, ErrMalformed},
		"bad marker":      {block, badMarker, ErrMalformed},
		"other frame sum": {otherBlock(t), ptr, ErrNoBlock},
	} {
		_, err := testDec.DecodeLog(tc.log, tc.ptr)
		if !errors.Is(err, tc.want) && (!errors.Is(tc.want, ErrMalformed) || !errors.Is(err, ErrDigest)) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
}

// TestDecodeLogLastBlock: an earlier, stale copy of a block with the same nonce
// (e.g. a log re-read) does not confuse the decoder; it takes the last pair.
func TestDecodeLogLastBlock(t *testing.T) {
	term, block, _ := testEnc.Encode(bigFrame())
	ptr, _, _ := testDec.DecodeTermination(string(term))
	log := append(append(append([]byte{}, block[:len(block)/2]...), "\n"...), block...)
	if _, err := testDec.DecodeLog(log, ptr); err != nil {
		t.Fatal(err)
	}
}

func dropLine(b []byte, n int) []byte {
	lines := bytes.SplitAfter(b, []byte{'\n'})
	return bytes.Join(append(lines[:n:n], lines[n+1:]...), nil)
}

func otherBlock(t *testing.T) []byte {
	t.Helper()
	f := bigFrame()
	f.SetStdout(randBytes(20000, 9))
	_, block, err := testEnc.Encode(f)
	if err != nil || block == nil {
		t.Fatalf("want log block: %v", err)
	}
	return block
}

func TestEncodeRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		enc Encoder
		f   Frame
	}{
		"pointer":       {Encoder{Key: testKey}, Frame{InLog: true}},
		"pointer field": {Encoder{Key: testKey}, Frame{LogLines: 3}},
		"both stdout":   {Encoder{Key: testKey}, Frame{Stdout: "a", StdoutB64: "YQ=="}},
		"bad marker":    {Encoder{Key: testKey, Marker: "a b"}, Frame{}},
		"long marker":   {Encoder{Key: testKey, Marker: strings.Repeat("m", 65)}, Frame{}},
	} {
		if _, _, err := tc.enc.Encode(tc.f); err == nil {
			t.Errorf("%s: Encode succeeded", name)
		}
	}
}

// TestSignatureSpelledOnce: only the runner's exact message verifies. The MAC's last
// base64url character carries two unused bits; a lenient decoder accepted the three
// other characters that differ in them (a fuzzing finding).
func TestSignatureSpelledOnce(t *testing.T) {
	term, _, err := testEnc.Encode(baseFrame())
	if err != nil {
		t.Fatal(err)
	}
	last := len(SignedPrefix) + macEncoding.EncodedLen(32) - 1
	for c := 0; c < 256; c++ {
		if byte(c) == term[last] {
			continue
		}
		m := []byte(string(term))
		m[last] = byte(c)
		if _, _, err := testDec.DecodeTermination(string(m)); !errors.Is(err, ErrSignature) {
			t.Errorf("MAC ending in %q instead of %q: %v, want ErrSignature", rune(c), rune(term[last]), err)
		}
	}
}
