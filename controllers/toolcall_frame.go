package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
)

// terminatedOutcome turns the tool container's terminated state and the runner's frame
// into the normaliser's input. A frame too large for the termination message is read from
// the container log, bounded by what the pointer frame announces.
func (r *ToolCallReconciler) terminatedOutcome(ctx context.Context, pod *corev1.Pod, t *corev1.ContainerStateTerminated, attempt int) pipeline.Outcome {
	o := pipeline.Outcome{ExitCode: int(t.ExitCode), TerminationReason: t.Reason, Started: true, Attempt: attempt}
	if t.Message == "" {
		// Killed before the runner could write (SIGKILL, OOM kill of the whole container).
		return o
	}
	f, needLog, err := frame.DecodeTermination(t.Message)
	if err == nil && needLog {
		f, err = r.readLogFrame(ctx, pod, f)
	}
	if err != nil {
		o.TerminationReason = ReasonResultUnreadable
		o.StderrTail = "the tool's result could not be read: " + err.Error()
		return o
	}
	o.ExitCode = f.ExitCode
	o.Signal = f.Signal
	o.StdoutTruncated = f.Truncated
	o.StdoutTotalBytes = f.StdoutBytes
	o.StderrTail = f.StderrTail
	if f.Reason != "" {
		o.StderrTail = f.Reason + ": " + f.Error
	}
	if data, err := f.StdoutData(); err == nil {
		o.Stdout = data
	}
	return o
}

func (r *ToolCallReconciler) readLogFrame(ctx context.Context, pod *corev1.Pod, pointer frame.Frame) (frame.Frame, error) {
	if r.Logs == nil {
		return frame.Frame{}, errNoLogReader
	}
	lines, limit := pointer.LogReadBounds()
	tail, err := r.Logs.TailLog(ctx, pod.Namespace, pod.Name, ToolContainerName, lines, limit)
	if err != nil {
		return frame.Frame{}, err
	}
	return frame.DecodeLog(tail, pointer)
}
