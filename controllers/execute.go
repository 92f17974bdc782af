package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/executor/frametrust"
	"github.com/toolgate/toolgate/controllers/framekeys"
	"github.com/toolgate/toolgate/controllers/frozenargs"
	"github.com/toolgate/toolgate/controllers/workspace"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
)

// wakeSource is implemented by an executor whose attempts end outside any watch (the warm
// executor's attach streams): each event wakes the call's reconcile.
type wakeSource interface {
	wakeups() chan ctrlevent.GenericEvent
}

// execEnv is what every executor is built from: the reconciler's clients and settings.
type execEnv struct {
	client.Client
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Clock     clock.PassiveClock
	Logs      LogReader
	Options   CallOptions
	// Recorder records the events executors emit themselves (egressgrant.EventBindFailed).
	Recorder recorder.EventRecorder
	// isolate checks, before a body may start, that its Pod is isolated as its tool's
	// sandbox.network requires (netisolation.Enforcer.Ensure): "" when it is, else why not.
	isolate func(ctx context.Context, call *v1alpha1.ToolCall, podLabels map[string]string) (string, error)
	// keys are the namespaces' frame masters: every attempt's frame is verified with the key
	// derived for it, and a namespace has its Secret before its first tool Pod.
	keys *framekeys.Store
	// frozen is the reconciler's carrier of the arguments admission froze.
	frozen *frozenargs.Store
	// workspaces make ready the session workspaces attempts mount (set by newJobExecutor).
	workspaces *workspace.Claims
}

// attemptDeadline is when the operator ends an attempt nobody reported on: the attempt's
// start plus the tool's timeout plus a grace for Pod start-up and status propagation.
func (e *execEnv) attemptDeadline(call *v1alpha1.ToolCall) time.Time {
	return attemptDeadline(call, e.Clock.Now(), e.Options.DeadlineGrace)
}

// frameKeyReady makes sure the call's namespace has its frame key Secret before a tool Pod
// there needs it (from memory but once per namespace and framekeys.TTL): a Secret the
// operator cannot use ends the call (OperatorError, saying so); any other error is retried.
// Not ok: st (a refusal) or err is what this pass comes to.
func (e *execEnv) frameKeyReady(ctx context.Context, call *v1alpha1.ToolCall) (masters [][]byte, st executor.Step, ok bool, err error) {
	masters, err = e.keys.Ensure(ctx, call.Namespace)
	switch {
	case errors.Is(err, framekeys.ErrSecret):
		return nil, executor.Internal(err.Error()), false, nil
	case err != nil:
		return nil, executor.Step{}, false, err
	}
	return masters, executor.Step{}, true, nil
}

// frozenArguments are the arguments admission froze: the canonical bytes under the digest
// recorded in status, carried rather than frozen again (controllers/frozenargs).
func (e *execEnv) frozenArguments(call *v1alpha1.ToolCall) (*pipeline.Frozen, error) {
	return e.frozen.Get(call, e.Options.MaxArgumentBytes)
}

// trust is what the call's current attempt's frames are believed by.
func (e *execEnv) trust(call *v1alpha1.ToolCall) frametrust.Trust {
	return frametrust.Trust{Masters: frametrust.StoreMasters(e.keys, call.Namespace), CallUID: call.UID,
		Attempt: int(currentAttempt(call)), Digest: call.Status.ArgumentsDigest, MaxOutput: podspec.MaxOutput(call.Status.Tool.Spec)}
}

// executors are the reconciler's backends, in the order chooseExecutor offers them a new
// attempt: the first that claims it runs it. The Job executor takes every attempt; it is last.
func (r *ToolCallReconciler) executors() []executor.Executor {
	r.execOnce.Do(func() {
		if r.keys == nil {
			r.keys = framekeys.New(r.Client, r.APIReader, r.Clock)
		}
		env := execEnv{Client: r.Client, APIReader: r.APIReader, Scheme: r.Scheme, Clock: r.Clock,
			Logs: r.Logs, Options: r.Options, Recorder: r.Recorder, isolate: r.enforcer().Ensure, keys: r.keys, frozen: &r.frozen}
		r.execs = []executor.Executor{newWarmExecutor(env, r.Warm), newJobExecutor(env)}
	})
	return r.execs
}

// executorFor is the executor that runs the call's current attempt (the Job executor for an
// attempt recorded without a path: calls from before paths were recorded).
func (r *ToolCallReconciler) executorFor(a *v1alpha1.Attempt) executor.Executor {
	execs := r.executors()
	if a != nil {
		for _, e := range execs {
			if e.Path() == a.Path {
				return e
			}
		}
	}
	return execs[len(execs)-1]
}

// current is the call's current attempt; nil before the first.
func current(call *v1alpha1.ToolCall) *v1alpha1.Attempt {
	if n := len(call.Status.Attempts); n > 0 {
		return &call.Status.Attempts[n-1]
	}
	return nil
}

// chooseExecutor offers the call's new attempt to each executor in turn and records where
// it runs (in memory but for what a claim does; the caller writes the status).
func (r *ToolCallReconciler) chooseExecutor(ctx context.Context, call *v1alpha1.ToolCall) {
	a := current(call)
	for _, e := range r.executors() {
		if where, ok := e.Claim(ctx, call, a); ok {
			r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionUnknown, v1alpha1.ReasonRunning,
				fmt.Sprintf("attempt %d runs in %s", a.Attempt, where))
			return
		}
	}
}

// execute starts the call's current attempt (its status already written).
func (r *ToolCallReconciler) execute(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	st, err := r.executorFor(current(call)).Start(ctx, call)
	return r.afterStep(ctx, call, st, err)
}

// observe reads the running attempt through its executor; the operator's own deadline
// (attemptDeadline) is every executor's backstop.
func (r *ToolCallReconciler) observe(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	if current(call) == nil || call.Status.Tool == nil || call.Status.Tool.Spec == nil {
		return r.finishInternal(ctx, call, "the call is running without an attempt or tool snapshot")
	}
	if st, ok := r.decided.get(call); ok {
		return r.afterStep(ctx, call, st, nil) // its end waits for its Pods (toolcall_stopping.go)
	}
	st, err := r.executorFor(current(call)).Observe(ctx, call)
	return r.afterStep(ctx, call, st, err)
}

// afterStep acts on what an executor's step came to: finish an ended attempt, end a call
// whose attempt could not start, or wait.
func (r *ToolCallReconciler) afterStep(ctx context.Context, call *v1alpha1.ToolCall, st executor.Step, err error) (ctrl.Result, error) {
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case st.Refused != nil:
		return r.endRefused(ctx, call, *st.Refused)
	case st.Outcome != nil:
		if st.Outcome.Unreadable != "" {
			ctrl.LoggerFrom(ctx).Info("the tool's frame cannot be trusted", "error", st.Outcome.Unreadable)
		}
		return r.finishAttempt(withContainerStart(ctx, st.ContainerStart), call, *st.Outcome)
	}
	return ctrl.Result{RequeueAfter: st.Requeue}, nil
}

// tidyExecutions lets every executor delete what the call's recorded attempts left (call
// nil: the call is gone) and returns when the next kept object is due (0: none).
func (r *ToolCallReconciler) tidyExecutions(ctx context.Context, key types.NamespacedName, call *v1alpha1.ToolCall) (time.Duration, error) {
	var next time.Duration
	var errs []error
	for _, e := range r.executors() {
		wait, err := e.Tidy(ctx, key, call)
		errs = append(errs, err)
		if wait > 0 && (next == 0 || wait < next) {
			next = wait
		}
	}
	return next, errors.Join(errs...)
}

// attemptDeadline is when the operator ends an attempt nobody reported on.
func (r *ToolCallReconciler) attemptDeadline(call *v1alpha1.ToolCall) time.Time {
	return attemptDeadline(call, r.Clock.Now(), r.Options.DeadlineGrace)
}

// attemptDeadline is the current attempt's start (now when none is recorded) plus the
// tool's timeout plus grace.
func attemptDeadline(call *v1alpha1.ToolCall, now time.Time, grace time.Duration) time.Time {
	start := now
	if a := current(call); a != nil && a.StartTime != nil {
		start = a.StartTime.Time
	}
	timeout := time.Duration(podspec.TimeoutSeconds(call.Status.Tool.Spec)) * time.Second
	return start.Add(timeout + grace)
}
