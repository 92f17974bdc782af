package controllers

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// tailFunc reads the end of the tool container's log.
type tailFunc func(ctx context.Context, tailLines, limitBytes int64) ([]byte, error)

// readFrame verifies the termination message with dec (the attempt's key and the call's
// output limit) and, for a pointer frame, reads the log within the bounds the limit
// allows and decodes the block the signed pointer vouches for.
func readFrame(ctx context.Context, dec frame.Decoder, msg string, tail tailFunc) (frame.Frame, error) {
	f, needLog, err := dec.DecodeTermination(msg)
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

// frameReaderFor is the frameReader of one attempt: the key is read back from the Job
// (the operator put it there; the body cannot change it), the bound is the call's output
// limit, and a log read gets at most timeout.
func frameReaderFor(spec *v1alpha1.ToolSpec, job *batchv1.Job, pod *corev1.Pod, logs LogReader, timeout time.Duration) frameReader {
	key, keyErr := jobFrameKey(job)
	dec := frame.Decoder{Key: key, MaxOutput: maxOutput(spec)}
	var tail tailFunc
	if logs != nil && pod != nil {
		tail = withTimeout(timeout, func(ctx context.Context, lines, limit int64) ([]byte, error) {
			return logs.TailLog(ctx, pod.Namespace, pod.Name, podcontract.ToolContainerName, lines, limit)
		})
	}
	return func(ctx context.Context, msg string) (frame.Frame, error) {
		if keyErr != nil {
			return frame.Frame{}, keyErr
		}
		return readFrame(ctx, dec, msg, tail)
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

// jobFrameKey is the frame key the operator gave the attempt's tool container.
func jobFrameKey(job *batchv1.Job) ([]byte, error) {
	for _, c := range job.Spec.Template.Spec.Containers {
		if c.Name != podcontract.ToolContainerName {
			continue
		}
		for _, e := range c.Env {
			if e.Name == podcontract.EnvFrameKey {
				return frame.ParseKey(e.Value)
			}
		}
	}
	return nil, frame.ErrNoKey
}
