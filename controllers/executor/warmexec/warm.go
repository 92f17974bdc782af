// Package warmexec is the warm executor (an executor.Executor): an attempt runs in a claimed
// Ready Pod of its tool's warm pool, handed its arguments over pods/attach. It returns what
// its steps came to; the ToolCall reconciler writes the call's status.
package warmexec

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/executor/execenv"
	"github.com/toolgate/toolgate/controllers/netisolation"
	"github.com/toolgate/toolgate/controllers/warmpool"
	"github.com/toolgate/toolgate/internal/tracing"
	"github.com/toolgate/toolgate/pkg/frame"
)

// WarmExecutor hands a claimed warm Pod's runner its Handover line on stdin and returns
// once the tool container's stdout closed (the container ended): when the Handover was
// written, and the tail of what the runner wrote on stdout (a frame.ResultLine, believed
// only once verified with the Pod's frame key). PodAttach is the real one (pods/attach);
// the test kit's simulated kubelet has its own.
type WarmExecutor interface {
	Handover(ctx context.Context, pod types.NamespacedName, line []byte) (WarmStream, error)
}

// WarmStream is what a WarmExecutor saw of one warm attempt.
type WarmStream struct {
	// HandedOver is when the Handover line was written (zero: it was not).
	HandedOver time.Time
	// StdoutTail is the end of the runner's stdout (at most warmStdoutTail bytes).
	StdoutTail []byte
	// Timings of the stream, when the executor measures them (zero: not known).
	Timings StreamTimings
}

// StreamTimings is when a warm attempt's attach stream passed each point (process clock).
type StreamTimings struct {
	Started     time.Time // the attach request was made
	Connected   time.Time // the stream first took stdin
	FirstOutput time.Time // the runner's first stdout byte arrived
	Ended       time.Time // the stream ended
}

// warmStdoutTail is how much of a warm runner's stdout the operator keeps: the result line
// of the largest termination message (base64), with room to spare.
const warmStdoutTail = 16 << 10

// warmRun is one warm attempt's handover (executor.Aside: memory only, so a new leader
// attaches again, and the runner takes one Handover only): its stream, and where the
// attempt's outcome was read (Note: sourceStream, sourcePod).
type warmRun = executor.AsideRun[WarmStream, string]

// Executor runs an attempt in a Ready Pod of its tool's warm pool (the pool reconciler,
// the warmpool package keeps the pools): the claim takes a Pod of exactly the call's admitted
// snapshot, start hands the runner its arguments through attach (WarmExecutor), observe
// reads the outcome from the attach stream's signed result line or from the Pod, and the
// Pod is deleted once the outcome is written: one call per Pod, never reused.
type Executor struct {
	execenv.Env
	attach WarmExecutor
	runs   *executor.Aside[WarmStream, string]
}

// New is the warm executor of env, handing Pods their arguments with attach.
func New(env execenv.Env, attach WarmExecutor) *Executor {
	return &Executor{Env: env, attach: attach, runs: executor.NewAside[WarmStream, string]()}
}

// Path is v1alpha1.PathWarm.
func (w *Executor) Path() v1alpha1.ExecutionPath { return v1alpha1.PathWarm }

// Supports is the warm executor's support table (warmpool.Supports, which the pools read).
func (w *Executor) Supports() executor.FeatureSet { return warmpool.Supports }

// Wakeups are the events of attach streams that ended (executor.WakeSource).
func (w *Executor) Wakeups() chan ctrlevent.GenericEvent { return w.runs.Wakeups() }

// Start hands the warm attempt's Pod its arguments: the namespace's isolation is checked
// first, exactly as before a Job is created, then the Handover runs aside and the call
// waits for its end or its deadline.
func (w *Executor) Start(ctx context.Context, call *v1alpha1.ToolCall) (executor.Step, error) {
	a := executor.Current(call)
	frozen, err := w.FrozenArguments(call)
	if err != nil {
		return executor.Internal("the frozen arguments could not be reproduced"), nil
	}
	pod := &corev1.Pod{}
	if err := w.Get(ctx, types.NamespacedName{Namespace: call.Namespace, Name: a.PodName}, pod); err != nil {
		return w.Observe(ctx, call) // gone or not cached yet: observing decides
	}
	isolating := time.Now()
	why, err := w.Isolate(ctx, call, pod.Labels)
	observeIsolation(isolating)
	if err != nil || why != "" {
		return netisolation.Refuse(why), err
	}
	masters, st, ok, err := w.FrameKeyReady(ctx, call)
	if !ok {
		return st, err
	}
	line, err := frame.EncodeHandover(handoverFor(call, int(a.Attempt), pod.UID, masters, frozen.Canonical(), frozen.Digest(),
		tracing.ExecutionTraceparent(ctx, int(a.Attempt))))
	if err != nil {
		return executor.Internal("the frozen arguments could not be handed over"), nil
	}
	deadline := w.AttemptDeadline(call)
	key := types.NamespacedName{Namespace: call.Namespace, Name: a.PodName}
	w.runs.Start(call, "", func() (WarmStream, error) {
		hctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		return w.attach.Handover(hctx, key, line)
	})
	return executor.Step{Requeue: deadline.Sub(w.Clock.Now())}, nil
}

// handoverFor is the Handover of the call's attempt for the claimed Pod podUID: it brings
// the attempt's key (derived from the current master: the operator verifies with every
// master it knows) and is signed with each of the namespace's masters' handover keys (the
// Pod may hold either across a rotation), so the runner takes it from the operator only,
// for this call, attempt, digest and Pod.
func handoverFor(call *v1alpha1.ToolCall, attempt int, podUID types.UID, masters [][]byte, args []byte, digest, traceparent string) frame.Handover {
	h := frame.Handover{CallUID: string(call.UID), Attempt: attempt, Arguments: args, ArgumentsDigest: digest, Traceparent: traceparent,
		AttemptKey: frame.AttemptKey(masters[0], string(call.UID), attempt)}
	return frame.SignHandover(masters, string(podUID), h)
}
