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
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
)

// executor runs stage 5 of a call, one attempt at a time, on one backend: a Job made for the
// attempt (exec_job*.go) or a claimed warm pool Pod (exec_warm*.go). The ToolCall reconciler
// chooses an executor once per attempt (chooseExecutor) and from then on talks to it only
// through this interface: it never asks which backend runs an attempt (as kueue's
// jobframework drives every job kind through GenericJob). A new backend (a session's
// workspace Pod, another runtime) is one more implementation, listed in executors.
type executor interface {
	// path is the value of status.attempts[].path of the attempts this executor runs.
	path() v1alpha1.ExecutionPath
	// claim offers the call's new attempt a (in memory, the last of status.attempts) to this
	// executor: ok when it takes it, after recording in a whatever it needs to find the
	// attempt again (path, Job or Pod name); where says where it runs ("Job x"). It may act
	// on the cluster (the warm executor claims a pool Pod) but writes no status; the caller
	// does, then calls start.
	claim(ctx context.Context, call *v1alpha1.ToolCall, a *v1alpha1.Attempt) (where string, ok bool)
	// start runs the call's current attempt, idempotently: an attempt a lost pass already
	// started is adopted, never started twice.
	start(ctx context.Context, call *v1alpha1.ToolCall) (step, error)
	// observe reads the current attempt: a step with the outcome once it ended.
	observe(ctx context.Context, call *v1alpha1.ToolCall) (step, error)
	// stop asks the running attempt to end (spec.cancel, the call's deletion) and says what
	// it stopped ("Job x deleted"); "" when nothing had started. It is called again on every
	// pass until the attempt's Pods have stopped (toolcall_stopping.go), so it must be
	// idempotent; a body may run on for its grace period after it returned.
	stop(ctx context.Context, call *v1alpha1.ToolCall) (string, error)
	// release lets go of the attempt ended once its outcome is written (a Job whose Pod will
	// not end by itself is deleted; a used warm Pod is deleted).
	release(ctx context.Context, call *v1alpha1.ToolCall, ended v1alpha1.Attempt, o pipeline.Outcome)
	// tidy runs on every pass, call nil when the call is gone: what recorded attempts left
	// behind is deleted once it is no longer needed. It returns how long until the next
	// thing it keeps is due (0: none).
	tidy(ctx context.Context, key types.NamespacedName, call *v1alpha1.ToolCall) (time.Duration, error)
}

// step is what an executor's start or observe came to.
type step struct {
	// outcome is the attempt's end, to normalise and finish (retry or freeze the result).
	outcome *pipeline.Outcome
	// refused ends the call without an outcome: the attempt could not be started.
	refused *startRefusal
	// containerStart is when the tool container started, for the trace (zero: unknown).
	containerStart time.Time
	// requeue is when to look again when nothing wakes the call sooner.
	requeue time.Duration
}

// startRefusal is why an attempt could not start; reason is one of the API's reasons.
type startRefusal struct {
	reason string
	// detail is for the Executed condition and the log, never for the model: what was
	// refused (a Job's name), why isolation is missing, or the internal error.
	detail string
	// err is the API server's refusal (ExecutionRejected).
	err error
	// message is the model-facing sentence of a refusal that ends the call with its own
	// reason (refuseStart); empty for the reasons above, which have paths of their own.
	message string
}

func refuseInternal(detail string) step {
	return step{refused: &startRefusal{reason: ReasonOperatorError, detail: detail}}
}

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
	// Recorder records the events executors emit themselves (EventEgressBindFailed).
	Recorder recorder.EventRecorder
	// isolate checks, before a body may start, that its Pod is isolated as its tool's
	// sandbox.network requires (ensureIsolation): "" when it is, else why not.
	isolate func(ctx context.Context, call *v1alpha1.ToolCall, podLabels map[string]string) (string, error)
	// keys are the namespaces' frame masters: every attempt's frame is verified with the key
	// derived for it, and a namespace has its Secret before its first tool Pod.
	keys *frameKeys
	// frozen is the reconciler's carrier of the arguments admission froze.
	frozen *frozenArguments
}

// attemptDeadline is when the operator ends an attempt nobody reported on: the attempt's
// start plus the tool's timeout plus a grace for Pod start-up and status propagation.
func (e *execEnv) attemptDeadline(call *v1alpha1.ToolCall) time.Time {
	return attemptDeadline(call, e.Clock.Now(), e.Options.DeadlineGrace)
}

// frameKeyReady makes sure the call's namespace has its frame key Secret before a tool Pod
// there needs it (from memory but once per namespace and frameKeyTTL): a Secret the
// operator cannot use ends the call (OperatorError, saying so); any other error is retried.
// Not ok: st (a refusal) or err is what this pass comes to.
func (e *execEnv) frameKeyReady(ctx context.Context, call *v1alpha1.ToolCall) (masters [][]byte, st step, ok bool, err error) {
	masters, err = e.keys.ensure(ctx, call.Namespace)
	switch {
	case errors.Is(err, errFrameKeySecret):
		return nil, refuseInternal(err.Error()), false, nil
	case err != nil:
		return nil, step{}, false, err
	}
	return masters, step{}, true, nil
}

// frozenArguments are the arguments admission froze: the canonical bytes under the digest
// recorded in status, carried rather than frozen again (frozenargs.go).
func (e *execEnv) frozenArguments(call *v1alpha1.ToolCall) (*pipeline.Frozen, error) {
	return e.frozen.get(call, e.Options.MaxArgumentBytes)
}

// executors are the reconciler's backends, in the order chooseExecutor offers them a new
// attempt: the first that claims it runs it. The Job executor takes every attempt; it is last.
func (r *ToolCallReconciler) executors() []executor {
	r.execOnce.Do(func() {
		if r.keys == nil {
			r.keys = newFrameKeys(r.Client, r.APIReader, r.Clock)
		}
		env := execEnv{Client: r.Client, APIReader: r.APIReader, Scheme: r.Scheme, Clock: r.Clock,
			Logs: r.Logs, Options: r.Options, Recorder: r.Recorder, isolate: r.ensureIsolation, keys: r.keys, frozen: &r.frozen}
		r.execs = []executor{newWarmExecutor(env, r.Warm), newJobExecutor(env)}
	})
	return r.execs
}

// executorFor is the executor that runs the call's current attempt (the Job executor for an
// attempt recorded without a path: calls from before paths were recorded).
func (r *ToolCallReconciler) executorFor(a *v1alpha1.Attempt) executor {
	execs := r.executors()
	if a != nil {
		for _, e := range execs {
			if e.path() == a.Path {
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
		if where, ok := e.claim(ctx, call, a); ok {
			r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionUnknown, v1alpha1.ReasonRunning,
				fmt.Sprintf("attempt %d runs in %s", a.Attempt, where))
			return
		}
	}
}

// execute starts the call's current attempt (its status already written).
func (r *ToolCallReconciler) execute(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	st, err := r.executorFor(current(call)).start(ctx, call)
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
	st, err := r.executorFor(current(call)).observe(ctx, call)
	return r.afterStep(ctx, call, st, err)
}

// afterStep acts on what an executor's step came to: finish an ended attempt, end a call
// whose attempt could not start, or wait.
func (r *ToolCallReconciler) afterStep(ctx context.Context, call *v1alpha1.ToolCall, st step, err error) (ctrl.Result, error) {
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case st.refused != nil:
		return r.refuseAttempt(ctx, call, *st.refused)
	case st.outcome != nil:
		if st.outcome.Unreadable != "" {
			ctrl.LoggerFrom(ctx).Info("the tool's frame cannot be trusted", "error", st.outcome.Unreadable)
		}
		return r.finishAttempt(withContainerStart(ctx, st.containerStart), call, *st.outcome)
	}
	return ctrl.Result{RequeueAfter: st.requeue}, nil
}

// refuseAttempt ends a call whose attempt could not start, through the path its reason has.
func (r *ToolCallReconciler) refuseAttempt(ctx context.Context, call *v1alpha1.ToolCall, f startRefusal) (ctrl.Result, error) {
	switch f.reason {
	case v1alpha1.ReasonNetworkIsolationMissing:
		return r.refuseUnisolated(ctx, call, f.detail)
	case string(pipeline.ReasonExecutionRejected):
		return r.rejectExecution(ctx, call, f.detail, f.err)
	}
	if f.message != "" {
		return r.refuseStart(ctx, call, f)
	}
	return r.finishInternal(ctx, call, f.detail)
}

// tidyExecutions lets every executor delete what the call's recorded attempts left (call
// nil: the call is gone) and returns when the next kept object is due (0: none).
func (r *ToolCallReconciler) tidyExecutions(ctx context.Context, key types.NamespacedName, call *v1alpha1.ToolCall) (time.Duration, error) {
	var next time.Duration
	var errs []error
	for _, e := range r.executors() {
		wait, err := e.tidy(ctx, key, call)
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
