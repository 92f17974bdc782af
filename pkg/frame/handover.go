package frame

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Warm Pods (a Tool's warm pool) are started before their call exists, so the call's
// arguments cannot be in their environment. The operator writes one Handover, a JSON
// object on one line, to the runner's stdin (pods/attach, stdinOnce); the runner verifies
// the Handover's auth (derive.go: whoever can attach but cannot read the namespace's frame
// key Secret cannot make a Pod run their arguments), then the arguments against the digest
// it carries exactly as it verifies TOOLGATE_ARGS, runs
// the body once, and writes its signed termination message again on stdout as one
// ResultLine, so the operator's attach stream returns the result as soon as the body ended.
// The termination message stays the durable record; the line is only believed when it
// verifies with the Pod's frame key, like the termination message itself.
const (
	// MaxHandoverBytes bounds a Handover line (arguments are at most 256 KiB, base64 4/3).
	MaxHandoverBytes = 512 << 10
	// resultLinePrefix starts the line that carries the signed termination message.
	resultLinePrefix = "--toolgate-warm-result "
)

// Handover is what the operator hands a warm Pod's runner for its one call. The runner
// takes it only when one of Auth verifies (VerifyHandover) with a public key it holds, for
// its own Pod: then it signs its frame with the Handover's AttemptKey.
type Handover struct {
	// CallUID and Attempt name the call and attempt the Pod was claimed for.
	CallUID string `json:"callUID"`
	Attempt int    `json:"attempt"`
	// Auth are Ed25519 signatures of the fields below for this Pod (SignHandover), one per
	// master the operator knows (at most MaxHandoverAuths).
	Auth []string `json:"auth"`
	// AttemptKey is the attempt's frame key (AttemptKey): the Pod holds no key before it.
	AttemptKey []byte `json:"attemptKey"`
	// Arguments are the frozen canonical bytes (base64 in JSON).
	Arguments []byte `json:"arguments"`
	// ArgumentsDigest is "sha256:<hex>" of Arguments, from the call's status.
	ArgumentsDigest string `json:"argumentsDigest"`
	// Traceparent is a W3C trace context for the body (TRACEPARENT), optional: a warm Pod
	// cannot take it in its environment as a cold Pod does.
	Traceparent string `json:"traceparent,omitempty"`
	// The fields below are a session Pod's (cmd/runner's session mode, CheckSession), absent
	// from a warm Pod's Handover; the auth covers them when they are set.
	//
	// DeadlineMs is the call's own time limit, in milliseconds, which the runner enforces.
	DeadlineMs int64 `json:"deadlineMs,omitempty"`
	// Env are the call's own variables for the body, "NAME=value" (its egress proxy grant,
	// say): added to the container's environment for this call only.
	Env []string `json:"env,omitempty"`
	// SecretEnv names those of Env whose values are credentials: redacted from this call's
	// output like the Pod's own (and refused when too short to redact).
	SecretEnv []string `json:"secretEnv,omitempty"`
}

// EncodeHandover is the Handover as one line.
func EncodeHandover(h Handover) ([]byte, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if len(b)+1 > MaxHandoverBytes {
		return nil, fmt.Errorf("handover of %d bytes exceeds %d", len(b)+1, MaxHandoverBytes)
	}
	return append(b, '\n'), nil
}

// ErrNoHandover: stdin ended (or went over the bound) before a whole Handover line.
var ErrNoHandover = errors.New("no arguments were handed over to the warm Pod")

// ReadHandover reads one Handover line from r, at most MaxHandoverBytes.
func ReadHandover(r io.Reader) (Handover, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxHandoverBytes), 64<<10)
	line, err := br.ReadSlice('\n')
	for errors.Is(err, bufio.ErrBufferFull) {
		var more []byte
		more, err = br.ReadSlice('\n')
		line = append(append([]byte(nil), line...), more...)
	}
	if err != nil {
		return Handover{}, fmt.Errorf("%w: %w", ErrNoHandover, err)
	}
	return decodeHandover(line)
}

// decodeHandover decodes one Handover line, refusing unknown fields.
func decodeHandover(line []byte) (Handover, error) {
	var h Handover
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return Handover{}, fmt.Errorf("%w: %w", ErrNoHandover, err)
	}
	return h, nil
}

// ResultLine is the line a warm runner writes on stdout after its termination message.
func ResultLine(termMsg []byte) []byte {
	return []byte("\n" + resultLinePrefix + base64.StdEncoding.EncodeToString(termMsg) + "\n")
}

// LastResultLine finds the last ResultLine in out (the tail of a warm Pod's stdout) and
// returns the termination message it carries, unverified: decode it with a Decoder.
func LastResultLine(out []byte) (string, bool) {
	i := bytes.LastIndex(out, []byte("\n"+resultLinePrefix))
	if i < 0 {
		return "", false
	}
	rest := out[i+1+len(resultLinePrefix):]
	end := bytes.IndexByte(rest, '\n')
	if end < 0 {
		return "", false
	}
	msg, err := base64.StdEncoding.Strict().DecodeString(string(rest[:end]))
	if err != nil || len(msg) > MaxTerminationMessage {
		return "", false
	}
	return string(msg), true
}
