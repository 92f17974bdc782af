// Package execenv is what every executor (controllers/executor/jobexec, warmexec) is built
// from: the reconciler's clients and settings, and the helpers they share over them.
package execenv

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/executor/frametrust"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/controllers/framekeys"
	"github.com/toolgate/toolgate/controllers/frozenargs"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
)

// Env is what every executor is built from: the reconciler's clients and settings.
type Env struct {
	client.Client
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Clock     clock.PassiveClock
	Logs      frametrust.Logs
	Options   options.Call
	// Recorder records the events executors emit themselves.
	Recorder recorder.EventRecorder
	// Isolate checks, before a body may start, that its Pod is isolated as its tool's
	// sandbox.network requires (netisolation.Enforcer.Ensure): "" when it is, else why not.
	Isolate func(ctx context.Context, call *v1alpha1.ToolCall, podLabels map[string]string) (string, error)
	// Keys are the namespaces' frame masters: every attempt's frame is verified with the key
	// derived for it, and a namespace has its Secret before its first tool Pod.
	Keys *framekeys.Store
	// Frozen is the reconciler's carrier of the arguments admission froze.
	Frozen *frozenargs.Store
	// Features are every feature (controllers/feature/all): executors call them, for the
	// features a call's tool uses, through this loop only.
	Features feature.List
}

// AttemptDeadline is when the operator ends an attempt nobody reported on: the attempt's
// start plus the tool's timeout plus a grace for Pod start-up and status propagation.
func (e *Env) AttemptDeadline(call *v1alpha1.ToolCall) time.Time {
	return executor.AttemptDeadline(call, e.Clock.Now(), e.Options.DeadlineGrace)
}

// FrameKeyReady makes sure the call's namespace has its frame key Secret before a tool Pod
// there needs it (from memory but once per namespace and framekeys.TTL): a Secret the
// operator cannot use ends the call (OperatorError, saying so); any other error is retried.
// Not ok: st (a refusal) or err is what this pass comes to.
func (e *Env) FrameKeyReady(ctx context.Context, call *v1alpha1.ToolCall) (masters [][]byte, st executor.Step, ok bool, err error) {
	masters, err = e.Keys.Ensure(ctx, call.Namespace)
	switch {
	case errors.Is(err, framekeys.ErrSecret):
		return nil, executor.Internal(err.Error()), false, nil
	case err != nil:
		return nil, executor.Step{}, false, err
	}
	return masters, executor.Step{}, true, nil
}

// FrozenArguments are the arguments admission froze: the canonical bytes under the digest
// recorded in status, carried rather than frozen again (controllers/frozenargs).
func (e *Env) FrozenArguments(call *v1alpha1.ToolCall) (*pipeline.Frozen, error) {
	return e.Frozen.Get(call, e.Options.MaxArgumentBytes)
}

// Trust is what the call's current attempt's frames are believed by.
func (e *Env) Trust(call *v1alpha1.ToolCall) frametrust.Trust {
	return frametrust.Trust{Masters: frametrust.StoreMasters(e.Keys, call.Namespace), CallUID: call.UID,
		Attempt: int(executor.CurrentAttempt(call)), Digest: call.Status.ArgumentsDigest, MaxOutput: podspec.MaxOutput(call.Status.Tool.Spec)}
}
