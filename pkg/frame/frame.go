package frame

import (
	"encoding/base64"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Version is the frame format version written by this package.
const Version = 1

// Size limits.
const (
	// MaxTerminationMessage is the kubelet's limit on a container's termination
	// message, in bytes.
	MaxTerminationMessage = 4096
	// MaxDecodedFrame bounds the size of a decompressed frame in bytes.
	MaxDecodedFrame = 64 << 20
)

// Encoding markers.
const (
	// CompressedPrefix starts a termination message holding base64(gzip(JSON)).
	CompressedPrefix = "tgz1:"
	// DefaultMarker names the begin and end lines of a log block.
	DefaultMarker = "toolgate-result"
	// DigestPrefix starts every digest in a frame.
	DigestPrefix = "sha256:"
)

// Exit codes of the runner for its own failures; otherwise the runner exits with
// the tool's exit code, or 128+N when signal N killed the tool.
const (
	// ExitRunnerError: the runner refused to run the tool or could not deliver
	// the frame (bad arguments digest, bad configuration, args file error).
	ExitRunnerError = 125
	// ExitStartError: the command exists but could not be started.
	ExitStartError = 126
	// ExitNotFound: the command was not found.
	ExitNotFound = 127
)

// Reasons set by the runner when the tool did not run (or the runner failed).
const (
	ReasonArgumentsDigestMismatch = "ArgumentsDigestMismatch"
	ReasonArgumentsFileError      = "ArgumentsFileError"
	ReasonInvalidConfiguration    = "InvalidConfiguration"
	ReasonCommandNotFound         = "CommandNotFound"
	ReasonStartError              = "StartError"
)

// Errors returned by the decoders (wrapped; test with errors.Is).
var (
	ErrMalformed = errors.New("frame: malformed")
	ErrVersion   = errors.New("frame: unsupported version")
	ErrNoBlock   = errors.New("frame: result block not found in log")
	ErrDigest    = errors.New("frame: result block digest mismatch")
	ErrTooLarge  = errors.New("frame: decoded frame too large")
)

// Frame is the result of one run of a tool's command.
type Frame struct {
	V          int    `json:"v"`
	ExitCode   int    `json:"exitCode"`         // runner's exit code: tool's code, 128+signal, or 125..127
	Signal     string `json:"signal,omitempty"` // e.g. "SIGKILL" when a signal killed the tool
	Reason     string `json:"reason,omitempty"` // runner failure, see Reason constants
	Error      string `json:"error,omitempty"`  // human-readable detail for Reason
	ArgsDigest string `json:"argsDigest,omitempty"`
	DurationMs int64  `json:"durationMs"`

	Stdout      string `json:"stdout,omitempty"`    // kept stdout, when valid UTF-8
	StdoutB64   string `json:"stdoutB64,omitempty"` // kept stdout, when not valid UTF-8
	StdoutBytes int64  `json:"stdoutBytes"`         // total stdout bytes written by the tool
	Truncated   bool   `json:"truncated,omitempty"` // stdout was cut to the limit
	StderrTail  string `json:"stderrTail,omitempty"`
	StderrBytes int64  `json:"stderrBytes,omitempty"` // total stderr bytes written by the tool
	// OutputLeftOpen: a process left behind by the tool kept stdout or stderr
	// open after the tool exited; the runner stopped reading after a grace
	// period, so later output is missing.
	OutputLeftOpen bool `json:"outputLeftOpen,omitempty"`

	// Pointer fields, set only in the termination message when the frame is in
	// the log.
	InLog      bool   `json:"inLog,omitempty"`
	LogBytes   int64  `json:"logBytes,omitempty"`   // bytes of the block from its begin line
	LogLines   int64  `json:"logLines,omitempty"`   // lines of the block
	FrameBytes int64  `json:"frameBytes,omitempty"` // bytes of the JSON frame in the block
	SHA256     string `json:"sha256,omitempty"`     // "sha256:<hex>" of the gzip bytes
	Marker     string `json:"marker,omitempty"`     // set when not DefaultMarker
}

// SetStdout stores the kept stdout bytes in Stdout or, when they are not valid
// UTF-8, in StdoutB64. It does not touch StdoutBytes or Truncated.
func (f *Frame) SetStdout(b []byte) {
	f.Stdout, f.StdoutB64 = "", ""
	switch {
	case len(b) == 0:
	case utf8.Valid(b):
		f.Stdout = string(b)
	default:
		f.StdoutB64 = base64.StdEncoding.EncodeToString(b)
	}
}

// StdoutData returns the kept stdout bytes.
func (f Frame) StdoutData() ([]byte, error) {
	if f.StdoutB64 == "" {
		return []byte(f.Stdout), nil
	}
	b, err := base64.StdEncoding.DecodeString(f.StdoutB64)
	if err != nil {
		return nil, fmt.Errorf("%w: stdoutB64: %w", ErrMalformed, err)
	}
	return b, nil
}

// StdoutIsUTF8 reports whether the kept stdout is valid UTF-8 text.
func (f Frame) StdoutIsUTF8() bool { return f.StdoutB64 == "" }

// Log read slack. The runner writes the block after all of the tool's stderr,
// but the container runtime reads stdout and stderr separately and may still
// log a few stderr lines after (or inside) the block. LogSlackLines extra lines
// are read for those; since pods/log applies limitBytes from the first line of
// the tail, LogSlackBytes allows each of them the maximum log line length of
// containerd (16 KiB; longer lines are split).
const (
	LogSlackLines = 16
	LogSlackBytes = LogSlackLines * 16 << 10
)

// LogReadBounds returns the tailLines and limitBytes with which the operator
// should read the container log for a pointer frame.
func (f Frame) LogReadBounds() (tailLines, limitBytes int64) {
	return f.LogLines + LogSlackLines, f.LogBytes + LogSlackBytes
}

func (f Frame) validate() error {
	if f.V != Version {
		return fmt.Errorf("%w: %d", ErrVersion, f.V)
	}
	if f.Stdout != "" && f.StdoutB64 != "" {
		return fmt.Errorf("%w: both stdout and stdoutB64", ErrMalformed)
	}
	if f.StdoutBytes < 0 || f.StderrBytes < 0 || f.DurationMs < 0 || f.LogBytes < 0 ||
		f.LogLines < 0 || f.FrameBytes < 0 {
		return fmt.Errorf("%w: negative count", ErrMalformed)
	}
	if _, err := f.StdoutData(); err != nil {
		return err
	}
	pointerFields := f.LogBytes != 0 || f.LogLines != 0 || f.FrameBytes != 0 || f.SHA256 != "" || f.Marker != ""
	if !f.InLog && pointerFields {
		return fmt.Errorf("%w: pointer fields in a full frame", ErrMalformed)
	}
	if f.InLog {
		if _, err := parseDigest(f.SHA256); err != nil {
			return err
		}
		if f.LogLines < 3 || f.LogBytes <= 0 || f.FrameBytes > MaxDecodedFrame {
			return fmt.Errorf("%w: bad pointer sizes", ErrMalformed)
		}
	}
	return nil
}
