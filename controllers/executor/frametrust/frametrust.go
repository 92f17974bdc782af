// Package frametrust is how an executor believes an attempt's frame: the runner's signed
// account of a tool run, read from a Pod's termination message, a warm Pod's attach stream
// or a Pod log block. It needs only the namespace's frame masters (controllers/framekeys),
// the call's identity, attempt and arguments digest, and a way to tail the Pod's log; it
// writes nothing and knows nothing of the reconciler.
package frametrust

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/controllers/framekeys"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Tail reads the end of the tool container's log.
type Tail func(ctx context.Context, tailLines, limitBytes int64) ([]byte, error)

// Masters returns a namespace's frame masters: from memory, or read again (fresh) when a
// frame did not verify with them.
type Masters func(ctx context.Context, fresh bool) ([][]byte, error)

// Logs reads the end of a container's log (the operator's LogReader).
type Logs interface {
	TailLog(ctx context.Context, namespace, pod, container string, tailLines, limitBytes int64) ([]byte, error)
}

// Reader verifies and decodes the runner's frame from a terminated tool container's
// termination message (reading the Pod log for a pointer frame).
type Reader func(ctx context.Context, msg string) (frame.Frame, error)

// Trust is what one attempt's frames are believed by, on every path (a cold Pod's or a
// warm Pod's termination message, the warm attach stream's result line, a Pod log block):
// the keys derived for the call's uid and this attempt from the namespace's masters
// (frame.AttemptKey; nothing is read from the Job or Pod spec, which hold no key), the
// call's arguments digest, and its output limit. A frame that verifies with none of the
// keys (a body's, another call's or attempt's) or that names other arguments is
// unreadable, never a Report.
type Trust struct {
	// Masters are the call's namespace's frame masters.
	Masters Masters
	// CallUID and Attempt name the attempt whose keys frames must be signed with.
	CallUID types.UID
	Attempt int
	// Digest is the call's arguments digest (status.argumentsDigest).
	Digest string
	// MaxOutput is the tool's output limit.
	MaxOutput int64
}

// ErrOtherArguments is a verified frame whose arguments digest is not the call's.
var ErrOtherArguments = errors.New("the runner's frame is for other arguments than the call's")

// ErrNoLogReader is a pointer frame read without a log reader to read its block with.
var ErrNoLogReader = errors.New("no log reader configured for results carried in the Pod log")

// StoreMasters are the masters of namespace as store keeps them.
func StoreMasters(store *framekeys.Store, namespace string) Masters {
	return func(ctx context.Context, fresh bool) ([][]byte, error) {
		if fresh {
			return store.Refresh(ctx, namespace)
		}
		return store.Ensure(ctx, namespace)
	}
}

func (t Trust) decoder(ctx context.Context, fresh bool) (frame.Decoder, error) {
	masters, err := t.Masters(ctx, fresh)
	if err != nil {
		return frame.Decoder{}, err
	}
	return frame.Decoder{Keys: framekeys.AttemptKeys(masters, t.CallUID, t.Attempt), MaxOutput: t.MaxOutput}, nil
}

// Termination verifies and decodes a termination message (or a warm result line, which
// carries one): with the namespace's masters from memory, and once more with them read
// again when the MAC does not match (the key may have been rotated since). It returns the
// decoder that verified it, for a pointer frame's log block, and whether one is needed.
func (t Trust) Termination(ctx context.Context, msg string) (f frame.Frame, dec frame.Decoder, needLog bool, err error) {
	dec, err = t.decoder(ctx, false)
	if err != nil {
		return frame.Frame{}, dec, false, err
	}
	f, needLog, err = dec.DecodeTermination(msg)
	if errors.Is(err, frame.ErrSignature) {
		if fresh, ferr := t.decoder(ctx, true); ferr == nil {
			dec = fresh
			f, needLog, err = dec.DecodeTermination(msg)
		}
	}
	switch {
	case errors.Is(err, frame.ErrSignature):
		return frame.Frame{}, dec, false, fmt.Errorf("the frame is not signed for this call's attempt %d: %w", t.Attempt, err)
	case err != nil:
		return frame.Frame{}, dec, false, err
	case f.ArgsDigest != t.Digest:
		return frame.Frame{}, dec, false, fmt.Errorf("%w (the frame names %q)", ErrOtherArguments, f.ArgsDigest)
	}
	return f, dec, needLog, nil
}

// Read verifies the termination message for the attempt and, for a pointer frame, reads
// the log within the bounds the call's limit allows and decodes the block the signed
// pointer vouches for (which agrees with the pointer, arguments digest included).
func (t Trust) Read(ctx context.Context, msg string, tail Tail) (frame.Frame, error) {
	f, dec, needLog, err := t.Termination(ctx, msg)
	if err != nil || !needLog {
		return f, err
	}
	if tail == nil {
		return frame.Frame{}, ErrNoLogReader
	}
	lines, limit := dec.LogReadBounds(f)
	log, err := tail(ctx, lines, limit)
	if err != nil {
		return frame.Frame{}, fmt.Errorf("reading the result from the Pod log: %w", err)
	}
	return dec.DecodeLog(log, f)
}

// PodReader is the Reader of one attempt's Pod: frames are believed by t, and a log read
// (of the signer container, through logs) gets at most timeout.
func (t Trust) PodReader(pod *corev1.Pod, logs Logs, timeout time.Duration) Reader {
	var tail Tail
	if logs != nil && pod != nil {
		tail = withTimeout(timeout, func(ctx context.Context, lines, limit int64) ([]byte, error) {
			return logs.TailLog(ctx, pod.Namespace, pod.Name, podcontract.SignerContainerName, lines, limit)
		})
	}
	return func(ctx context.Context, msg string) (frame.Frame, error) {
		return t.Read(ctx, msg, tail)
	}
}

// withTimeout bounds each call of tail by d (no bound when d <= 0).
func withTimeout(d time.Duration, tail Tail) Tail {
	return func(ctx context.Context, lines, limit int64) ([]byte, error) {
		if d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		return tail(ctx, lines, limit)
	}
}
