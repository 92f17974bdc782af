package frame

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Version is the frame format version written by this package.
const Version = 1

// Size limits. Every size a decoder accepts derives from these and from the
// call's own output limit (see MaxFrameBytes).
const (
	// MaxTerminationMessage is the kubelet's limit on a container's termination
	// message, in bytes.
	MaxTerminationMessage = 4096
	// MaxOutputLimit is the largest stdout limit a runner accepts (bytes kept).
	MaxOutputLimit = 4 << 20
	// MaxStderrTail is the largest stderr tail a runner keeps, in bytes.
	MaxStderrTail = 64 << 10
	// MaxErrorLen bounds the runner's own error text ("error"), in bytes.
	MaxErrorLen = 1024
	// frameOverhead bounds everything in a JSON frame but stdout, stderrTail and
	// error: field names, numbers, the arguments digest, signal and reason.
	frameOverhead = 2 << 10
	// jsonEscapeMax is the worst-case growth of a string under JSON escaping
	// (a control character becomes \u00XX).
	jsonEscapeMax = 6
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

// MinCredentialBytes is the shortest credential value the runner accepts (after trimming
// surrounding white space): a shorter one would match ordinary output and could not be
// redacted meaningfully.
const MinCredentialBytes = 8

// Reasons set by the runner when the tool did not run (or the runner failed).
const (
	ReasonArgumentsDigestMismatch = "ArgumentsDigestMismatch"
	ReasonArgumentsFileError      = "ArgumentsFileError"
	ReasonInvalidConfiguration    = "InvalidConfiguration"
	ReasonCommandNotFound         = "CommandNotFound"
	ReasonStartError              = "StartError"
	// ReasonHandoverRefused: a warm runner was handed a Handover whose auth does not verify;
	// the body is not run and the frame is unsigned (the runner cannot tell who asked).
	ReasonHandoverRefused = "HandoverRefused"
	// ReasonCredentialTooShort: a credential the body would get is shorter than
	// MinCredentialBytes, too short to redact without mangling the output; the body
	// did not run.
	ReasonCredentialTooShort = "CredentialTooShort"
	// ReasonBodyLost: the signer never heard how the tool ended — the body's container
	// never reached it, or its side of the runner went away without reporting (killed,
	// OOM-killed, or replaced by a body that can signal its PID 1). Such a frame vouches for
	// no run: the operator reads the attempt's end from the kubelet alone.
	ReasonBodyLost = "BodyLost"
	// ReasonDeadlineExceeded: a session call ran past its Handover's deadline; the runner
	// stopped it (its process group: SIGTERM, then SIGKILL) and the session ends. The same
	// word the pipeline uses for a Job's deadline.
	ReasonDeadlineExceeded = "DeadlineExceeded"
	// ReasonSessionResetFailed and ReasonResultUndelivered end a session Pod (its signer's
	// termination message, never a call's frame): the tool's container could not be reset
	// after a call (a process not killed, /tmp or $HOME not wiped), or a call's frame could
	// not be written to the operator's connection.
	ReasonSessionResetFailed = "SessionResetFailed"
	ReasonResultUndelivered  = "ResultUndelivered"
)

// Errors returned by the decoders (wrapped; test with errors.Is).
var (
	ErrMalformed = errors.New("frame: malformed")
	ErrVersion   = errors.New("frame: unsupported version")
	ErrNoBlock   = errors.New("frame: result block not found in log")
	ErrDigest    = errors.New("frame: result block digest mismatch")
	ErrTooLarge  = errors.New("frame: larger than the call's output limit allows")
	// ErrUnsigned: the termination message carries no MAC (the body may have written it).
	ErrUnsigned = errors.New("frame: not signed by the runner")
	// ErrSignature: the MAC does not match the attempt's key.
	ErrSignature = errors.New("frame: signature does not match")
	// ErrNoKey: the decoder was given no key, so it can verify nothing.
	ErrNoKey = errors.New("frame: no frame key")
)

// Frame is the result of one run of a tool's command.
type Frame struct {
	V        int    `json:"v"`
	ExitCode int    `json:"exitCode"`         // runner's exit code: tool's code, 128+signal, or 125..127
	Signal   string `json:"signal,omitempty"` // e.g. "SIGKILL" when a signal killed the tool
	Reason   string `json:"reason,omitempty"` // runner failure, see Reason constants
	Error    string `json:"error,omitempty"`  // human-readable detail for Reason
	// ArgsDigest is the digest of the arguments the runner was asked to serve (the call's
	// status.argumentsDigest): it runs the body only on arguments that hash to it. The
	// operator accepts no frame that names other arguments.
	ArgsDigest string `json:"argsDigest,omitempty"`
	DurationMs int64  `json:"durationMs"`

	Stdout      string `json:"stdout,omitempty"`    // kept stdout, when valid UTF-8
	StdoutB64   string `json:"stdoutB64,omitempty"` // kept stdout, when not valid UTF-8
	StdoutBytes int64  `json:"stdoutBytes"`         // total stdout bytes written by the tool (after redaction)
	Truncated   bool   `json:"truncated,omitempty"` // stdout was cut to the limit
	StderrTail  string `json:"stderrTail,omitempty"`
	StderrBytes int64  `json:"stderrBytes,omitempty"` // total stderr bytes written by the tool (after redaction)
	// OutputLeftOpen: a process left behind by the tool kept stdout or stderr
	// open after the tool exited; the runner stopped reading after a grace
	// period, so later output is missing.
	OutputLeftOpen bool `json:"outputLeftOpen,omitempty"`
	// Redactions is how many credential values (in any of the forms the runner
	// recognises) it replaced in stdout and stderr; never what they were. The other
	// output fields describe the output after those replacements. The pointer of a
	// frame in the log carries it too.
	Redactions int64 `json:"redactions,omitempty"`

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
// UTF-8 or JSON escaping would make them longer than base64 does, in StdoutB64:
// either way the frame carries them in at most 4/3 of their size, which is what
// lets a decoder bound a frame by the call's output limit (MaxFrameBytes). It
// does not touch StdoutBytes or Truncated.
func (f *Frame) SetStdout(b []byte) {
	f.Stdout, f.StdoutB64 = "", ""
	switch {
	case len(b) == 0:
	case utf8.Valid(b) && jsonStringLen(b) <= base64.StdEncoding.EncodedLen(len(b)):
		f.Stdout = string(b)
	default:
		f.StdoutB64 = base64.StdEncoding.EncodeToString(b)
	}
}

// jsonStringLen is an upper bound of the length of valid UTF-8 b as the inside
// of a JSON string (encoding/json escaping, HTML escaping off).
func jsonStringLen(b []byte) int {
	n := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20:
			n += jsonEscapeMax
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9):
			n += jsonEscapeMax // U+2028, U+2029 become \u2028, \u2029
			i += 2
		default:
			n++
		}
	}
	return n
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
func (f Frame) StdoutIsUTF8() bool {
	if f.StdoutB64 == "" {
		return true
	}
	b, err := f.StdoutData()
	return err == nil && utf8.Valid(b)
}

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

// MaxFrameBytes is the size of the largest JSON frame an honest runner writes
// when it keeps at most maxOutput bytes of stdout (maxOutput <= 0 or above
// MaxOutputLimit means MaxOutputLimit): stdout as base64 at worst (see
// SetStdout), the stderr tail and error at their worst JSON escaping, and the
// fixed fields. Decoders refuse anything larger, before allocating it.
func MaxFrameBytes(maxOutput int64) int64 {
	if maxOutput <= 0 || maxOutput > MaxOutputLimit {
		maxOutput = MaxOutputLimit
	}
	return int64(base64.StdEncoding.EncodedLen(int(maxOutput))) +
		jsonEscapeMax*(MaxStderrTail+MaxErrorLen) + frameOverhead
}

// maxLogBlock returns the largest block (bytes from its begin line, and lines)
// that Encode writes for a JSON frame of frameBytes: gzip of incompressible
// data grows by its stored-block headers (5 bytes per 64 KiB; n/64 is ample),
// base64 by 4/3, and each data line adds the nonce tag.
func maxLogBlock(frameBytes int64) (logBytes, logLines int64) {
	gz := frameBytes + frameBytes/64 + 1024
	b64 := (gz + 2) / 3 * 4
	data := (b64 + logChunkLen - 1) / logChunkLen
	marker := int64(len(beginLine(strings.Repeat("m", maxMarkerLen), strings.Repeat("0", nonceLen)))) + 1
	return b64 + data*(nonceLen+2) + 2*marker, data + 2
}

func (f Frame) validate() error {
	if f.V != Version {
		return fmt.Errorf("%w: %d", ErrVersion, f.V)
	}
	if f.Stdout != "" && f.StdoutB64 != "" {
		return fmt.Errorf("%w: both stdout and stdoutB64", ErrMalformed)
	}
	if f.StdoutBytes < 0 || f.StderrBytes < 0 || f.DurationMs < 0 || f.LogBytes < 0 ||
		f.LogLines < 0 || f.FrameBytes < 0 || f.Redactions < 0 {
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
		if f.LogLines < 3 || f.LogBytes <= 0 || f.FrameBytes <= 0 {
			return fmt.Errorf("%w: bad pointer sizes", ErrMalformed)
		}
	}
	return nil
}
