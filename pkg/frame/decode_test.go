package frame

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
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
		{[]byte("ok\x00nul"), true, false},
	} {
		var f Frame
		f.SetStdout(tc.in)
		got, err := f.StdoutData()
		if err != nil || !bytes.Equal(got, tc.in) || f.StdoutIsUTF8() != tc.utf8 || (f.StdoutB64 != "") != tc.b64field {
			t.Errorf("SetStdout(%q): got %q err %v utf8 %v b64 %q", tc.in, got, err, f.StdoutIsUTF8(), f.StdoutB64)
		}
	}
}

func TestDecodeTerminationErrors(t *testing.T) {
	gz := func(s string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write([]byte(s))
		w.Close()
		return CompressedPrefix + base64.StdEncoding.EncodeToString(b.Bytes())
	}
	good, _, _ := Encode(Frame{Stdout: "x"})
	for name, tc := range map[string]struct {
		msg  string
		want error
	}{
		"empty":           {"", ErrMalformed},
		"text":            {"panic: runtime error", ErrMalformed},
		"truncated json":  {string(good[:len(good)-3]), ErrMalformed},
		"trailing":        {string(good) + "{}", ErrMalformed},
		"no version":      {`{"exitCode":0}`, ErrVersion},
		"version 2":       {`{"v":2}`, ErrVersion},
		"null":            {`{"v":1,"exitCode":"x"}`, ErrMalformed},
		"both stdout":     {`{"v":1,"stdout":"a","stdoutB64":"YQ=="}`, ErrMalformed},
		"bad b64 stdout":  {`{"v":1,"stdoutB64":"!!"}`, ErrMalformed},
		"negative":        {`{"v":1,"stdoutBytes":-1}`, ErrMalformed},
		"pointer no hash": {`{"v":1,"inLog":true,"logBytes":10,"logLines":3}`, ErrMalformed},
		"pointer sizes":   {`{"v":1,"inLog":true,"sha256":"sha256:` + strings.Repeat("a", 64) + `"}`, ErrMalformed},
		"pointer fields":  {`{"v":1,"sha256":"x"}`, ErrMalformed},
		"tgz bad b64":     {CompressedPrefix + "***", ErrMalformed},
		"tgz not gzip":    {CompressedPrefix + "aGVsbG8=", ErrMalformed},
		"tgz bad json":    {gz("{nope"), ErrMalformed},
	} {
		_, _, err := DecodeTermination(tc.msg)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
}

func TestDecodeTerminationBomb(t *testing.T) {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range MaxDecodedFrame>>20 + 1 {
		_, _ = w.Write(zeros)
	}
	w.Close()
	msg := CompressedPrefix + base64.StdEncoding.EncodeToString(b.Bytes())
	if _, _, err := DecodeTermination(msg); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

func bigFrame() Frame {
	f := baseFrame()
	f.SetStdout(randBytes(20000, 4))
	f.StdoutBytes = 20000
	return f
}

func TestDecodeLogErrors(t *testing.T) {
	term, block, err := Encode(bigFrame())
	if err != nil || block == nil {
		t.Fatalf("want log block: %v", err)
	}
	ptr, _, _ := DecodeTermination(string(term))
	flip := bytes.Clone(block)
	i := bytes.LastIndex(flip, []byte("\n--")) - 5 // inside the last data line
	flip[i] ^= 'A' ^ 'B'
	otherPtr := ptr
	otherPtr.ExitCode = 3
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
		"bad marker":      {block, badMarker, ErrMalformed},
		"other frame sum": {otherBlock(t), ptr, ErrNoBlock},
	} {
		_, err := DecodeLog(tc.log, tc.ptr)
		if !errors.Is(err, tc.want) && (!errors.Is(tc.want, ErrMalformed) || !errors.Is(err, ErrDigest)) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
}

// TestDecodeLogLastBlock: an earlier, stale copy of a block with the same nonce
// (e.g. a log re-read) does not confuse the decoder; it takes the last pair.
func TestDecodeLogLastBlock(t *testing.T) {
	term, block, _ := Encode(bigFrame())
	ptr, _, _ := DecodeTermination(string(term))
	log := append(append(append([]byte{}, block[:len(block)/2]...), "\n"...), block...)
	if _, err := DecodeLog(log, ptr); err != nil {
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
	_, block, err := Encode(f)
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
		"pointer":       {Encoder{}, Frame{InLog: true}},
		"pointer field": {Encoder{}, Frame{LogLines: 3}},
		"both stdout":   {Encoder{}, Frame{Stdout: "a", StdoutB64: "YQ=="}},
		"bad marker":    {Encoder{Marker: "a b"}, Frame{}},
		"long marker":   {Encoder{Marker: strings.Repeat("m", 65)}, Frame{}},
	} {
		if _, _, err := tc.enc.Encode(tc.f); err == nil {
			t.Errorf("%s: Encode succeeded", name)
		}
	}
}
