package approvalevents

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers that carry the signature.
const (
	HeaderSignature = "X-Toolgate-Signature"
	HeaderTimestamp = "X-Toolgate-Timestamp"
	// HeaderAttempt is the delivery attempt (1, 2, …): informational, not signed.
	HeaderAttempt = "X-Toolgate-Delivery-Attempt"
)

// DefaultTolerance is how far a timestamp may be from the receiver's clock.
const DefaultTolerance = 5 * time.Minute

// DefaultMaxBodyBytes bounds the body a Verifier reads from a request.
const DefaultMaxBodyBytes = 1 << 20

const signaturePrefix = "sha256="

// ErrSignature is returned (wrapped) for a missing, malformed or wrong signature.
var ErrSignature = errors.New("signature does not verify")

// ErrTimestamp is returned (wrapped) for a missing or malformed timestamp, or one outside
// the tolerance.
var ErrTimestamp = errors.New("timestamp refused")

// Sign returns the X-Toolgate-Timestamp and X-Toolgate-Signature values for body, signed
// with key at time at.
func Sign(key, body []byte, at time.Time) (timestamp, signature string) {
	timestamp = strconv.FormatInt(at.Unix(), 10)
	return timestamp, signaturePrefix + hex.EncodeToString(mac(key, timestamp, body))
}

func mac(key []byte, timestamp string, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verifier checks signed requests.
type Verifier struct {
	// Keys are the accepted HMAC keys (two while a key is being rotated).
	Keys [][]byte
	// Tolerance is how far the timestamp may be from Now; zero: DefaultTolerance.
	Tolerance time.Duration
	// Now is the receiver's clock; nil: time.Now.
	Now func() time.Time
	// MaxBodyBytes bounds what Request reads; zero: DefaultMaxBodyBytes.
	MaxBodyBytes int64
}

// Verify checks that signature is body's MAC under one of the keys for timestamp, and that
// timestamp is within the tolerance. The comparison is constant-time.
func (v Verifier) Verify(body []byte, timestamp, signature string) error {
	secs, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not unix seconds", ErrTimestamp, timestamp)
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	tolerance := v.Tolerance
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if skew := now().Sub(time.Unix(secs, 0)); skew > tolerance || skew < -tolerance {
		return fmt.Errorf("%w: %s away from now, over %s", ErrTimestamp, skew.Round(time.Second), tolerance)
	}
	hexMAC, ok := strings.CutPrefix(signature, signaturePrefix)
	if !ok {
		return fmt.Errorf("%w: want %s<hex>", ErrSignature, signaturePrefix)
	}
	got, err := hex.DecodeString(hexMAC)
	if err != nil {
		return fmt.Errorf("%w: not hex", ErrSignature)
	}
	for _, key := range v.Keys {
		if hmac.Equal(got, mac(key, timestamp, body)) {
			return nil
		}
	}
	return ErrSignature
}

// Request reads r's body (at most MaxBodyBytes), verifies its signature headers and decodes
// the event. Answer 2xx only once the event is handled: the operator retries otherwise.
func (v Verifier) Request(r *http.Request) (*Notification, error) {
	limit := v.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("body over %d bytes", limit)
	}
	if err := v.Verify(body, r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderSignature)); err != nil {
		return nil, err
	}
	return Decode(body)
}
