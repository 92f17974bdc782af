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

// DecodeTermination decodes a container's termination message. needLog is true
// when f is a pointer frame: the full frame is then in the container log, to be
// read with f.LogReadBounds() and decoded with DecodeLog(logTail, f).
func DecodeTermination(msg string) (f Frame, needLog bool, err error) {
	s := strings.TrimSpace(msg)
	var js []byte
	switch {
	case strings.HasPrefix(s, CompressedPrefix):
		gz, err := base64.StdEncoding.DecodeString(s[len(CompressedPrefix):])
		if err != nil {
			return Frame{}, false, fmt.Errorf("%w: base64: %w", ErrMalformed, err)
		}
		if js, err = gunzip(gz); err != nil {
			return Frame{}, false, err
		}
	case strings.HasPrefix(s, "{"):
		js = []byte(s)
	default:
		return Frame{}, false, fmt.Errorf("%w: not a result frame", ErrMalformed)
	}
	f, err = unmarshal(js)
	if err != nil {
		return Frame{}, false, err
	}
	return f, f.InLog, nil
}

// DecodeLog extracts the frame that pointer refers to from the end of a
// container log: it takes the last begin/end block pair tagged with the
// pointer's nonce, skips lines not tagged with it, verifies the SHA-256 and
// checks that the frame agrees with the pointer's summary.
func DecodeLog(logTail []byte, pointer Frame) (Frame, error) {
	if !pointer.InLog {
		return Frame{}, fmt.Errorf("%w: not a pointer frame", ErrMalformed)
	}
	if err := pointer.validate(); err != nil {
		return Frame{}, err
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
	js, err := gunzip(gz)
	if err != nil {
		return Frame{}, err
	}
	if pointer.FrameBytes != 0 && int64(len(js)) != pointer.FrameBytes {
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
		f.ArgsDigest == p.ArgsDigest && f.StdoutBytes == p.StdoutBytes && f.Truncated == p.Truncated
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

func gunzip(gz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("%w: gzip: %w", ErrMalformed, err)
	}
	js, err := io.ReadAll(io.LimitReader(zr, MaxDecodedFrame+1))
	if err != nil {
		return nil, fmt.Errorf("%w: gzip: %w", ErrMalformed, err)
	}
	if len(js) > MaxDecodedFrame {
		return nil, ErrTooLarge
	}
	return js, nil
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
