package frame

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Decoder verifies and decodes the frames of one attempt. Every size it accepts
// is bounded by the call's own output limit: a frame, compressed or not, that
// an honest runner with that limit could not have written is refused with
// ErrTooLarge before it is inflated or read.
type Decoder struct {
	// Key is the attempt's frame key (AttemptKey); without it (or Keys) nothing verifies.
	Key []byte
	// Keys are further keys any of which may have signed (an attempt key derived from each
	// master the operator knows, across a rotation).
	Keys [][]byte
	// MaxOutput is the call's stdout limit in bytes, as given to the runner
	// (<= 0: MaxOutputLimit).
	MaxOutput int64
}

func (d Decoder) maxFrame() int64 { return MaxFrameBytes(d.MaxOutput) }

// DecodeTermination verifies and decodes a container's termination message.
// The message must be signed with d.Key (ErrUnsigned, ErrSignature otherwise);
// the MAC is checked, in constant time, before anything is decoded or
// decompressed. needLog is true when f is a pointer frame: the full frame is
// then in the container log, to be read with d.LogReadBounds(f) and decoded
// with d.DecodeLog(logTail, f).
func (d Decoder) DecodeTermination(msg string) (f Frame, needLog bool, err error) {
	if len(msg) > MaxTerminationMessage {
		return Frame{}, false, fmt.Errorf("%w: termination message of %d bytes", ErrTooLarge, len(msg))
	}
	body, err := verifyAny(append([][]byte{d.Key}, d.Keys...), strings.TrimSpace(msg))
	if err != nil {
		return Frame{}, false, err
	}
	if f, err = decodeBody(body, d.maxFrame()); err != nil {
		return Frame{}, false, err
	}
	if f.InLog {
		if err := d.checkPointer(f); err != nil {
			return Frame{}, false, err
		}
	}
	return f, f.InLog, nil
}

// decodeBody decodes an unsigned termination message, inflating at most max bytes.
func decodeBody(s string, max int64) (Frame, error) {
	var js []byte
	switch {
	case strings.HasPrefix(s, CompressedPrefix):
		gz, err := base64.StdEncoding.DecodeString(s[len(CompressedPrefix):])
		if err != nil {
			return Frame{}, fmt.Errorf("%w: base64: %w", ErrMalformed, err)
		}
		if js, err = gunzip(gz, max); err != nil {
			return Frame{}, err
		}
	case strings.HasPrefix(s, "{"):
		js = []byte(s)
	default:
		return Frame{}, fmt.Errorf("%w: not a result frame", ErrMalformed)
	}
	return unmarshal(js)
}

// checkPointer refuses a pointer whose sizes the call's limit does not allow.
func (d Decoder) checkPointer(p Frame) error {
	if p.FrameBytes > d.maxFrame() {
		return fmt.Errorf("%w: pointer announces a frame of %d bytes", ErrTooLarge, p.FrameBytes)
	}
	if maxBytes, maxLines := maxLogBlock(p.FrameBytes); p.LogBytes > maxBytes || p.LogLines > maxLines {
		return fmt.Errorf("%w: pointer announces a log block of %d bytes, %d lines", ErrTooLarge, p.LogBytes, p.LogLines)
	}
	return nil
}

// LogReadBounds returns the tailLines and limitBytes with which to read the
// container log for pointer p: what p announces, never more than the call's
// output limit allows, plus the slack for interleaved stderr lines.
func (d Decoder) LogReadBounds(p Frame) (tailLines, limitBytes int64) {
	maxBytes, maxLines := maxLogBlock(min(max(p.FrameBytes, 0), d.maxFrame()))
	return min(p.LogLines, maxLines) + LogSlackLines, min(p.LogBytes, maxBytes) + LogSlackBytes
}

// DecodeLog extracts the frame that pointer (from DecodeTermination) refers to
// from the end of a container log: it takes the last begin/end block pair
// tagged with the pointer's nonce, skips lines not tagged with it, verifies the
// SHA-256 the signed pointer carries before inflating exactly the announced
// frame size, and checks that the frame agrees with the pointer's summary.
func (d Decoder) DecodeLog(logTail []byte, pointer Frame) (Frame, error) {
	if !pointer.InLog {
		return Frame{}, fmt.Errorf("%w: not a pointer frame", ErrMalformed)
	}
	if err := pointer.validate(); err != nil {
		return Frame{}, err
	}
	if err := d.checkPointer(pointer); err != nil {
		return Frame{}, err
	}
	if _, limit := d.LogReadBounds(pointer); int64(len(logTail)) > limit {
		return Frame{}, fmt.Errorf("%w: log tail of %d bytes", ErrTooLarge, len(logTail))
	}
	digest, _ := parseDigest(pointer.SHA256) // validated above
	marker := pointer.Marker
	if marker == "" {
		marker = DefaultMarker
	}
	if !ValidMarker(marker) {
		return Frame{}, fmt.Errorf("%w: marker", ErrMalformed)
	}
	b64, err := extractBlock(logTail, marker, digest[:nonceLen])
	if err != nil {
		return Frame{}, err
	}
	gz, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return Frame{}, fmt.Errorf("%w: block base64: %w", ErrMalformed, err)
	}
	if sum := sha256.Sum256(gz); hex.EncodeToString(sum[:]) != digest {
		return Frame{}, ErrDigest
	}
	js, err := gunzip(gz, pointer.FrameBytes)
	if err != nil {
		return Frame{}, err
	}
	if int64(len(js)) != pointer.FrameBytes {
		return Frame{}, fmt.Errorf("%w: frame is %d bytes, pointer says %d", ErrMalformed, len(js), pointer.FrameBytes)
	}
	f, err := unmarshal(js)
	if err != nil {
		return Frame{}, err
	}
	if f.InLog || !agrees(f, pointer) {
		return Frame{}, fmt.Errorf("%w: block frame disagrees with pointer", ErrMalformed)
	}
	return f, nil
}

// extractBlock returns the concatenated data of the last complete block.
func extractBlock(log []byte, marker, nonce string) (string, error) {
	begin, end := []byte(beginLine(marker, nonce)), []byte(endLine(marker, nonce))
	lines := bytes.Split(log, []byte{'\n'})
	last := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if bytes.Equal(bytes.TrimSpace(lines[i]), end) {
			last = i
			break
		}
	}
	first := -1
	for i := last - 1; i >= 0; i-- {
		if bytes.Equal(bytes.TrimSpace(lines[i]), begin) {
			first = i
			break
		}
	}
	if last < 0 || first < 0 {
		return "", ErrNoBlock
	}
	tag := []byte(nonce + " ")
	var sb strings.Builder
	for _, l := range lines[first+1 : last] {
		if rest, ok := bytes.CutPrefix(bytes.TrimSpace(l), tag); ok {
			sb.Write(rest)
		}
	}
	return sb.String(), nil
}

func agrees(f, p Frame) bool {
	return f.ExitCode == p.ExitCode && f.Signal == p.Signal && f.Reason == p.Reason &&
		f.ArgsDigest == p.ArgsDigest && f.StdoutBytes == p.StdoutBytes && f.Truncated == p.Truncated &&
		f.Redactions == p.Redactions
}

func unmarshal(js []byte) (Frame, error) {
	var f Frame
	dec := json.NewDecoder(bytes.NewReader(js))
	if err := dec.Decode(&f); err != nil {
		return Frame{}, fmt.Errorf("%w: json: %w", ErrMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Frame{}, fmt.Errorf("%w: trailing data after frame", ErrMalformed)
	}
	if err := f.validate(); err != nil {
		return Frame{}, err
	}
	return f, nil
}

// gunzip inflates gz, refusing more than max bytes: it never holds more than
// max+1 bytes of output (plus the reader's fixed window).
func gunzip(gz []byte, max int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("%w: gzip: %w", ErrMalformed, err)
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(zr, max+1))
	if err != nil {
		return nil, fmt.Errorf("%w: gzip: %w", ErrMalformed, err)
	}
	if n > max {
		return nil, fmt.Errorf("%w: inflates to more than %d bytes", ErrTooLarge, max)
	}
	return buf.Bytes(), nil
}

// parseDigest returns the lowercase hex of a "sha256:<64 hex>" digest.
func parseDigest(d string) (string, error) {
	h, ok := strings.CutPrefix(d, DigestPrefix)
	if !ok || len(h) != 2*sha256.Size {
		return "", fmt.Errorf("%w: digest %q", ErrMalformed, d)
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", fmt.Errorf("%w: digest %q", ErrMalformed, d)
	}
	return strings.ToLower(h), nil
}
