package frame

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// KeySize is the length of a frame key in bytes.
const KeySize = 32

// SignedPrefix starts a signed termination message:
//
//	tgs1:<base64url(HMAC-SHA256(key, BODY)), 43 characters>:BODY
//
// where BODY is an unsigned termination message (a JSON frame, a CompressedPrefix
// frame or a pointer frame), byte for byte.
const SignedPrefix = "tgs1:"

// macEncoding is strict: a decoder that ignored the two unused bits of the last
// character would verify three other spellings of every signed message (found by
// fuzzing; see docs/fuzzing.md).
var macEncoding = base64.RawURLEncoding.Strict()

// signatureLen is what signing adds to a termination message.
var signatureLen = len(SignedPrefix) + macEncoding.EncodedLen(sha256.Size) + 1

// NewKey returns a fresh random key, encoded as the frame key Secret holds a master.
func NewKey() (string, error) {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("frame: key: %w", err)
	}
	return macEncoding.EncodeToString(b), nil
}

// ParseKey decodes a key encoded by NewKey (a master from the frame key Secret).
func ParseKey(s string) ([]byte, error) {
	b, err := macEncoding.DecodeString(s)
	if err != nil || len(b) != KeySize {
		return nil, fmt.Errorf("%w: a frame key is %d bytes of base64url", ErrNoKey, KeySize)
	}
	return b, nil
}

func mac(key, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(body)
	return h.Sum(nil)
}

// sign wraps an unsigned termination message body.
func sign(key, body []byte) []byte {
	out := make([]byte, 0, signatureLen+len(body))
	out = append(out, SignedPrefix...)
	out = macEncoding.AppendEncode(out, mac(key, body))
	out = append(out, ':')
	return append(out, body...)
}

// verify checks a signed termination message against key, in constant time,
// and returns its body. Nothing of the body is looked at before the MAC matched.
func verify(key []byte, msg string) (string, error) {
	return verifyAny([][]byte{key}, msg)
}

// verifyAny is verify for a message that any of keys (empty ones skipped) may have signed.
func verifyAny(keys [][]byte, msg string) (string, error) {
	var usable [][]byte
	for _, k := range keys {
		if len(k) > 0 {
			usable = append(usable, k)
		}
	}
	if len(usable) == 0 {
		return "", ErrNoKey
	}
	rest, ok := strings.CutPrefix(msg, SignedPrefix)
	if !ok {
		return "", ErrUnsigned
	}
	n := macEncoding.EncodedLen(sha256.Size)
	if len(rest) < n+1 || rest[n] != ':' {
		return "", fmt.Errorf("%w: malformed signature", ErrSignature)
	}
	got, err := macEncoding.DecodeString(rest[:n])
	if err != nil {
		return "", fmt.Errorf("%w: malformed signature", ErrSignature)
	}
	body := rest[n+1:]
	for _, k := range usable {
		if hmac.Equal(got, mac(k, []byte(body))) {
			return body, nil
		}
	}
	return "", ErrSignature
}
