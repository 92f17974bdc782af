package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// tailFunc reads the end of the tool container's log.
type tailFunc func(ctx context.Context, tailLines, limitBytes int64) ([]byte, error)

// mastersFunc returns a namespace's frame masters: from memory, or read again (fresh) when
// a frame did not verify with them.
type mastersFunc func(ctx context.Context, fresh bool) ([][]byte, error)

// frameTrust is what one attempt's frames are believed by, on every path (a cold Pod's or a
// warm Pod's termination message, the warm attach stream's result line, a Pod log block):
// the keys derived for the call's uid and this attempt from the namespace's masters
// (frame.AttemptKey; nothing is read from the Job or Pod spec, which hold no key), the
// call's arguments digest, and its output limit. A frame that verifies with none of the
// keys (a body's, another call's or attempt's) or that names other arguments is
// unreadable, never a Report.
type frameTrust struct {
	masters   mastersFunc
	callUID   types.UID
	attempt   int
	digest    string
	maxOutput int64
}

// errOtherArguments: a verified frame whose arguments digest is not the call's.
var errOtherArguments = errors.New("the runner's frame is for other arguments than the call's")

// trust is the frameTrust of the call's current attempt.
func (e *execEnv) trust(call *v1alpha1.ToolCall) frameTrust {
	ns := call.Namespace
	return frameTrust{
		masters: func(ctx context.Context, fresh bool) ([][]byte, error) {
			if fresh {
				return e.keys.refresh(ctx, ns)
			}
			return e.keys.ensure(ctx, ns)
		},
		callUID: call.UID, attempt: int(currentAttempt(call)), digest: call.Status.ArgumentsDigest,
		maxOutput: podspec.MaxOutput(call.Status.Tool.Spec),
	}
}

func (t frameTrust) decoder(ctx context.Context, fresh bool) (frame.Decoder, error) {
	masters, err := t.masters(ctx, fresh)
	if err != nil {
		return frame.Decoder{}, err
	}
	return frame.Decoder{Keys: attemptKeys(masters, t.callUID, t.attempt), MaxOutput: t.maxOutput}, nil
}

// termination verifies and decodes a termination message (or a warm result line, which
// carries one): with the namespace's masters from memory, and once more with them read
// again when the MAC does not match (the key may have been rotated since). It returns the
// decoder that verified it, for a pointer frame's log block.
func (t frameTrust) termination(ctx context.Context, msg string) (frame.Frame, frame.Decoder, bool, error) {
	dec, err := t.decoder(ctx, false)
	if err != nil {
		return frame.Frame{}, dec, false, err
	}
	f, needLog, err := dec.DecodeTermination(msg)
	if errors.Is(err, frame.ErrSignature) {
		if fresh, ferr := t.decoder(ctx, true); ferr == nil {
			dec = fresh
			f, needLog, err = dec.DecodeTermination(msg)
		}
	}
	switch {
	case errors.Is(err, frame.ErrSignature):
		return frame.Frame{}, dec, false, fmt.Errorf("the frame is not signed for this call's attempt %d: %w", t.attempt, err)
	case err != nil:
		return frame.Frame{}, dec, false, err
	case f.ArgsDigest != t.digest:
		return frame.Frame{}, dec, false, fmt.Errorf("%w (the frame names %q)", errOtherArguments, f.ArgsDigest)
	}
	return f, dec, needLog, nil
}

// readFrame verifies the termination message for the attempt and, for a pointer frame,
// reads the log within the bounds the call's limit allows and decodes the block the signed
// pointer vouches for (which agrees with the pointer, arguments digest included).
func readFrame(ctx context.Context, t frameTrust, msg string, tail tailFunc) (frame.Frame, error) {
	f, dec, needLog, err := t.termination(ctx, msg)
	if err != nil || !needLog {
		return f, err
	}
	if tail == nil {
		return frame.Frame{}, errNoLogReader
	}
	lines, limit := dec.LogReadBounds(f)
	log, err := tail(ctx, lines, limit)
	if err != nil {
		return frame.Frame{}, fmt.Errorf("reading the result from the Pod log: %w", err)
	}
	return dec.DecodeLog(log, f)
}

// frameReaderFor is the frameReader of one attempt's Pod: frames are believed by t, and a
// log read gets at most timeout.
func frameReaderFor(t frameTrust, pod *corev1.Pod, logs LogReader, timeout time.Duration) frameReader {
	var tail tailFunc
	if logs != nil && pod != nil {
		tail = withTimeout(timeout, func(ctx context.Context, lines, limit int64) ([]byte, error) {
			return logs.TailLog(ctx, pod.Namespace, pod.Name, podcontract.SignerContainerName, lines, limit)
		})
	}
	return func(ctx context.Context, msg string) (frame.Frame, error) {
		return readFrame(ctx, t, msg, tail)
	}
}

// withTimeout bounds each call of tail by d (no bound when d <= 0).
func withTimeout(d time.Duration, tail tailFunc) tailFunc {
	return func(ctx context.Context, lines, limit int64) ([]byte, error) {
		if d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		return tail(ctx, lines, limit)
	}
}
