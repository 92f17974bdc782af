package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/toolgate/toolgate/pkg/frame"
)

// The link joins the two halves of the runner in a tool Pod, over a Unix socket: the
// signer (which holds the attempt's key and the credentials' values, in a container of
// its own) and the body side (PID 1 of the body's container, which holds no key). Each
// message is a type byte, a 4-byte big-endian length and that many bytes.
//
//	signer → body side: one linkStartMsg (JSON: run or not, the arguments, where to put them)
//	body side → signer: linkStdout and linkStderr chunks, then one linkEndMsg (JSON)
//
// Everything the body side sends is the body's to forge: it shares the body's container,
// and under a runtime that lets a body signal or trace its PID 1 the body may speak for it.
// So the signer believes of it only what a body may say anyway — its output and how it
// says it ended — and bounds every message; what the body cannot forge (which call and
// arguments, the sizes kept, redaction, the signature) is the signer's own, and how the
// container really ended is the kubelet's, which the operator compares with the frame.
const (
	linkStart  byte = 's'
	linkStdout byte = 'o'
	linkStderr byte = 'e'
	linkEnd    byte = 'x'
	// maxLinkChunk bounds an output chunk; maxLinkEnd the end message; the start message
	// carries the arguments (a Handover's bound).
	maxLinkChunk = 32 << 10
	maxLinkEnd   = 16 << 10
	maxLinkStart = frame.MaxHandoverBytes
)

// linkStartMsg is the signer's one message to the body side.
type linkStartMsg struct {
	// Run is false when the signer refused the call (it reports why in its frame): the
	// body side then runs nothing and exits ExitRunnerError.
	Run         bool   `json:"run"`
	Args        []byte `json:"args,omitempty"`
	ArgsFile    string `json:"argsFile,omitempty"`
	Traceparent string `json:"traceparent,omitempty"`
	// Session mode: the call's own variables (frame.CheckSession bounds them) and its
	// deadline, which the body side enforces on the tool's process group.
	Env        []string `json:"env,omitempty"`
	DeadlineMs int64    `json:"deadlineMs,omitempty"`
}

// linkEndMsg is how the tool ended, as the body side saw it.
type linkEndMsg struct {
	ExitCode       int    `json:"exitCode"`
	Signal         string `json:"signal,omitempty"`
	Reason         string `json:"reason,omitempty"`
	Error          string `json:"error,omitempty"`
	DurationMs     int64  `json:"durationMs,omitempty"`
	OutputLeftOpen bool   `json:"outputLeftOpen,omitempty"`
	// Session mode: the body side stopped the tool at its deadline; CleanupError is why it
	// could not reset the container after the call (the session then ends).
	DeadlineExceeded bool   `json:"deadlineExceeded,omitempty"`
	CleanupError     string `json:"cleanupError,omitempty"`
}

var errLinkMessage = errors.New("malformed message on the runner's link")

// linkWriter writes messages; safe for concurrent use (stdout and stderr copy at once).
type linkWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *linkWriter) send(typ byte, p []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	if _, err := l.w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := l.w.Write(p)
	return err
}

func (l *linkWriter) sendJSON(typ byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return l.send(typ, b)
}

// stream is an io.Writer that sends what is written as chunks of one type. It never fails
// (a signer gone away must not block or kill the tool): errors are dropped.
func (l *linkWriter) stream(typ byte) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		for rest := p; len(rest) > 0; {
			n := min(len(rest), maxLinkChunk)
			_ = l.send(typ, rest[:n])
			rest = rest[n:]
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// readLink reads one message, refusing a type not in want and a length over its bound.
func readLink(r *bufio.Reader, want map[byte]int) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	limit, ok := want[hdr[0]]
	n := binary.BigEndian.Uint32(hdr[1:])
	if !ok || int64(n) > int64(limit) {
		return 0, nil, fmt.Errorf("%w (type %q, %d bytes)", errLinkMessage, hdr[0], n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	return hdr[0], p, nil
}

// receive copies the body side's output to out and errs until its end message, and
// returns it; ok is false when the link ended (or broke the protocol) before one came.
func receive(r io.Reader, out, errs io.Writer) (end linkEndMsg, ok bool) {
	br := bufio.NewReaderSize(r, 64<<10)
	want := map[byte]int{linkStdout: maxLinkChunk, linkStderr: maxLinkChunk, linkEnd: maxLinkEnd}
	for {
		typ, p, err := readLink(br, want)
		if err != nil {
			return linkEndMsg{}, false
		}
		switch typ {
		case linkStdout:
			_, _ = out.Write(p)
		case linkStderr:
			_, _ = errs.Write(p)
		case linkEnd:
			if json.Unmarshal(p, &end) != nil {
				return linkEndMsg{}, false
			}
			return end, true
		}
	}
}

// linkMsg is one message the body side sent.
type linkMsg struct {
	typ byte
	p   []byte
}

// linkMessages reads the body side's messages (output chunks, end messages, each within
// its bound) for a whole session, one at a time as they are taken; the channel is closed
// when the link ends or breaks the protocol.
func linkMessages(r io.Reader) <-chan linkMsg {
	ch := make(chan linkMsg)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(r, 64<<10)
		want := map[byte]int{linkStdout: maxLinkChunk, linkStderr: maxLinkChunk, linkEnd: maxLinkEnd}
		for {
			typ, p, err := readLink(br, want)
			if err != nil {
				return
			}
			ch <- linkMsg{typ, p}
		}
	}()
	return ch
}
