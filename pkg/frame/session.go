package frame

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A session Pod (cmd/runner's session mode) runs one session's calls one after another. The
// operator writes one Handover line per call on its connection to the Pod's signer
// (HandoverReader reads them) and reads one ResultLine back per Handover.
const (
	// MaxSessionDeadlineMs bounds a session Handover's DeadlineMs (one day).
	MaxSessionDeadlineMs = 24 * 60 * 60 * 1000
	// MaxSessionEnv bounds a session Handover's Env; MaxSessionEnvValue each value's bytes;
	// MaxSessionEnvName each name's.
	MaxSessionEnv      = 32
	MaxSessionEnvValue = 16 << 10
	MaxSessionEnvName  = 128
	// MaxSessionSecretEnv bounds a session Handover's SecretEnv.
	MaxSessionSecretEnv = 8
)

// CheckSession reports whether a session Handover's own fields are within their bounds: a
// deadline in [1, MaxSessionDeadlineMs] ms; at most MaxSessionEnv variables, each
// NAME=value with a name of [A-Za-z_][A-Za-z0-9_]* (at most MaxSessionEnvName bytes), not
// one the runner sets itself (TOOLGATE_*, TRACEPARENT: the Handover has its own field),
// each name once, the value at most MaxSessionEnvValue bytes; SecretEnv at most
// MaxSessionSecretEnv names, each one of Env's. The operator checks before it sends, the
// runner again before it runs anything.
func CheckSession(h Handover) error {
	if h.DeadlineMs < 1 || h.DeadlineMs > MaxSessionDeadlineMs {
		return fmt.Errorf("session handover: deadline %d ms not in [1, %d]", h.DeadlineMs, MaxSessionDeadlineMs)
	}
	if len(h.Env) > MaxSessionEnv {
		return fmt.Errorf("session handover: %d variables, at most %d", len(h.Env), MaxSessionEnv)
	}
	names := map[string]bool{}
	for _, kv := range h.Env {
		name, value, ok := strings.Cut(kv, "=")
		switch {
		case !ok || !validEnvName(name):
			return fmt.Errorf("session handover: variable %.64q is not NAME=value", kv)
		case strings.HasPrefix(name, "TOOLGATE_") || name == "TRACEPARENT":
			return fmt.Errorf("session handover: variable %s is the runner's to set", name)
		case names[name]:
			return fmt.Errorf("session handover: variable %s given twice", name)
		case len(value) > MaxSessionEnvValue:
			return fmt.Errorf("session handover: variable %s is over %d bytes", name, MaxSessionEnvValue)
		}
		names[name] = true
	}
	if len(h.SecretEnv) > MaxSessionSecretEnv {
		return fmt.Errorf("session handover: %d secret variables, at most %d", len(h.SecretEnv), MaxSessionSecretEnv)
	}
	for _, name := range h.SecretEnv {
		if !names[name] {
			return fmt.Errorf("session handover: secret variable %.64q is not one of its variables", name)
		}
	}
	return nil
}

func validEnvName(s string) bool {
	if s == "" || len(s) > MaxSessionEnvName {
		return false
	}
	for i, c := range s {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// ErrMalformedHandover: a whole line was read that is no Handover (over MaxHandoverBytes,
// not its JSON): the writer broke the protocol. Other errors of HandoverReader.Next are
// the connection's.
var ErrMalformedHandover = errors.New("malformed handover")

// HandoverReader reads Handover lines one after another from a connection.
type HandoverReader struct {
	br *bufio.Reader
}

// NewHandoverReader reads Handovers from r.
func NewHandoverReader(r io.Reader) *HandoverReader {
	return &HandoverReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next reads the next Handover line, at most MaxHandoverBytes. It returns io.EOF (alone)
// when r ended at a line boundary (the operator closed an idle connection); anything else
// that is no whole Handover line (a line over the bound, malformed, r ended inside one)
// is an error wrapping ErrNoHandover.
func (hr *HandoverReader) Next() (Handover, error) {
	var line []byte
	for {
		chunk, err := hr.br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxHandoverBytes {
			return Handover{}, fmt.Errorf("%w: %w: a line over %d bytes", ErrNoHandover, ErrMalformedHandover, MaxHandoverBytes)
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return Handover{}, io.EOF
		}
		if err != nil {
			return Handover{}, fmt.Errorf("%w: %w", ErrNoHandover, err)
		}
		h, err := decodeHandover(line)
		if err != nil {
			return Handover{}, fmt.Errorf("%w: %w", ErrMalformedHandover, err)
		}
		return h, nil
	}
}

// EndsSession reports whether a session Pod's runner ends its session after a reply with
// this reason (cmd/runner's "Session mode"): the operator replaces the Pod.
func EndsSession(reason string) bool {
	switch reason {
	case ReasonHandoverRefused, ReasonInvalidConfiguration, ReasonArgumentsDigestMismatch, ReasonCredentialTooShort,
		ReasonDeadlineExceeded, ReasonBodyLost, ReasonSessionResetFailed, ReasonResultUndelivered:
		return true
	}
	return false
}
