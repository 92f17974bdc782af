package frame

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

const (
	nonceLen     = 12 // hex digits of the gzip digest that tag a log block
	logChunkLen  = 96 // base64 characters per log data line
	maxMarkerLen = 64
)

// Encoder encodes frames, signed with an attempt's key. cmd/runner and the test
// kit's simulated kubelet both encode with it, so there is one implementation.
type Encoder struct {
	// Key signs the termination message (see SignedPrefix). Without one the
	// message is unsigned, which a Decoder refuses: only for local runs.
	Key []byte
	// Marker names the log block's begin and end lines; empty means
	// DefaultMarker. See ValidMarker.
	Marker string
}

// Encode returns the termination message for f and, when the frame does not fit
// in the termination message even compressed, the log block to write at the very
// end of the container log (logBlock is nil otherwise). It sets f.V to Version;
// the pointer fields (InLog etc.) must be zero. The log block needs no signature
// of its own: the signed pointer carries its SHA-256.
func (e Encoder) Encode(f Frame) (termMsg, logBlock []byte, err error) {
	body, logBlock, err := e.encode(f)
	if err != nil || len(e.Key) == 0 {
		return body, logBlock, err
	}
	return sign(e.Key, body), logBlock, nil
}

// encode returns the unsigned termination message, sized to leave room for the
// signature when there is a key.
func (e Encoder) encode(f Frame) (termMsg, logBlock []byte, err error) {
	room := MaxTerminationMessage
	if len(e.Key) > 0 {
		room -= signatureLen
	}
	marker := e.Marker
	if marker == "" {
		marker = DefaultMarker
	}
	if !ValidMarker(marker) {
		return nil, nil, fmt.Errorf("frame: invalid marker %q", marker)
	}
	if f.InLog {
		return nil, nil, errors.New("frame: Encode of a pointer frame")
	}
	f.V = Version
	if err := f.validate(); err != nil {
		return nil, nil, err
	}
	js, err := marshal(f)
	if err != nil || len(js) <= room {
		return js, nil, err
	}
	gz, err := gzipBytes(js)
	if err != nil {
		return nil, nil, err
	}
	if n := len(CompressedPrefix) + base64.StdEncoding.EncodedLen(len(gz)); n <= room {
		return append([]byte(CompressedPrefix), base64.StdEncoding.EncodeToString(gz)...), nil, nil
	}
	sum := sha256.Sum256(gz)
	digest := hex.EncodeToString(sum[:])
	core, lines := logBlockCore(gz, marker, digest[:nonceLen])
	p := pointer(f, digest, int64(len(js)), int64(len(core)), lines)
	if marker != DefaultMarker {
		p.Marker = marker
	}
	termMsg, err = marshalPointer(p, room)
	if err != nil {
		return nil, nil, err
	}
	return termMsg, append([]byte{'\n'}, core...), nil
}

// ValidMarker reports whether m can name a log block: 1 to 64 characters from
// [A-Za-z0-9._-].
func ValidMarker(m string) bool {
	if m == "" || len(m) > maxMarkerLen {
		return false
	}
	for _, c := range m {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// DigestOf returns "sha256:<hex>" of b, the form of ArgsDigest.
func DigestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return DigestPrefix + hex.EncodeToString(sum[:])
}

func marshal(f Frame) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("frame: encode: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func beginLine(marker, nonce string) string { return "--" + marker + "-begin " + nonce + "--" }
func endLine(marker, nonce string) string   { return "--" + marker + "-end " + nonce + "--" }

// logBlockCore returns the block from its begin line on, and its line count.
func logBlockCore(gz []byte, marker, nonce string) ([]byte, int64) {
	b64 := base64.StdEncoding.EncodeToString(gz)
	var sb strings.Builder
	sb.Grow(len(b64) + (len(b64)/logChunkLen+1)*(nonceLen+2) + 2*(len(marker)+nonceLen+16))
	sb.WriteString(beginLine(marker, nonce) + "\n")
	lines := int64(2)
	for len(b64) > 0 {
		n := min(logChunkLen, len(b64))
		sb.WriteString(nonce + " " + b64[:n] + "\n")
		b64 = b64[n:]
		lines++
	}
	sb.WriteString(endLine(marker, nonce) + "\n")
	return []byte(sb.String()), lines
}

// pointer returns the summary of f that goes in the termination message.
func pointer(f Frame, digest string, frameBytes, logBytes, logLines int64) Frame {
	return Frame{
		V: Version, ExitCode: f.ExitCode, Signal: f.Signal, Reason: f.Reason, Error: f.Error,
		ArgsDigest: f.ArgsDigest, DurationMs: f.DurationMs,
		StdoutBytes: f.StdoutBytes, Truncated: f.Truncated, StderrBytes: f.StderrBytes,
		OutputLeftOpen: f.OutputLeftOpen, Redactions: f.Redactions,
		InLog: true, LogBytes: logBytes, LogLines: logLines, FrameBytes: frameBytes,
		SHA256: DigestPrefix + digest,
	}
}

// marshalPointer encodes p, shortening p.Error until it fits in room bytes.
func marshalPointer(p Frame, room int) ([]byte, error) {
	for {
		js, err := marshal(p)
		if err != nil || len(js) <= room {
			return js, err
		}
		if p.Error == "" {
			return nil, fmt.Errorf("frame: pointer frame is %d bytes", len(js))
		}
		p.Error = strings.ToValidUTF8(p.Error[:len(p.Error)/2], "")
	}
}
