package toolcall

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/executor/execenv"
	"github.com/toolgate/toolgate/controllers/executor/jobexec"
	"github.com/toolgate/toolgate/controllers/executor/sessionexec"
	"github.com/toolgate/toolgate/controllers/executor/warmexec"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/controllers/feature/all"
	"github.com/toolgate/toolgate/controllers/framekeys"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/controllers/startgate"
)

// executors are the reconciler's backends, in the order chooseExecutor offers them a new
// attempt: the first that claims it runs it. The Job executor takes every attempt; it is last.
func (r *Reconciler) executors() []executor.Executor {
	r.execOnce.Do(func() {
		if r.Keys == nil {
			r.Keys = framekeys.New(r.Client, r.APIReader, r.Clock)
		}
		env := execenv.Env{Client: r.Client, APIReader: r.APIReader, Scheme: r.Scheme, Clock: r.Clock,
			Logs: r.Logs, Options: r.Options, Recorder: r.Recorder, Isolate: r.enforcer().Ensure, Keys: r.Keys, Frozen: &r.frozen,
			Features: r.features()}
		r.execs = []executor.Executor{warmexec.New(env, r.Warm), jobexec.New(env)}
		// A session call runs in its session's Pod before any other executor is asked.
		if sx, err := sessionexec.New(env, r.Session); err == nil {
			r.execs = append([]executor.Executor{sx}, r.execs...)
		} else {
			ctrl.Log.Error(err, "session sandboxes are off: every session call runs in a Pod of its own")
		}
	})
	return r.execs
}

// features are every feature, built once from the reconciler's clients and settings: the
// reconciler and its executors call the ones a call uses through this list only.
func (r *Reconciler) features() feature.List {
	r.featureOnce.Do(func() {
		r.featureList = all.New(all.Deps{Client: r.Client, APIReader: r.APIReader, Scheme: r.Scheme, Clock: r.Clock,
			Recorder: r.Recorder, Options: r.Options, Deadline: r.attemptDeadline})
	})
	return r.featureList
}

// executorFor is the executor that runs the call's current attempt (the Job executor for an
// attempt recorded without a path: calls from before paths were recorded).
func (r *Reconciler) executorFor(a *v1alpha1.Attempt) executor.Executor {
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

// chooseExecutor offers the call's new attempt to each executor in turn and records where
// it runs (in memory but for what a claim does; the caller writes the status).
func (r *Reconciler) chooseExecutor(ctx context.Context, call *v1alpha1.ToolCall) {
	a := executor.Current(call)
	for _, e := range r.executors() {
		if where, ok := e.Claim(ctx, call, a); ok {
			r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionUnknown, v1alpha1.ReasonRunning,
				fmt.Sprintf("attempt %d runs in %s", a.Attempt, where))
			return
		}
	}
}

// execute starts the call's current attempt (its status already written).
func (r *Reconciler) execute(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	st, err := r.executorFor(executor.Current(call)).Start(ctx, call)
	return r.afterStep(ctx, call, st, err)
}

// observe reads the running attempt through its executor; the operator's own deadline
// (attemptDeadline) is every executor's backstop.
func (r *Reconciler) observe(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	if executor.Current(call) == nil || call.Status.Tool == nil || call.Status.Tool.Spec == nil {
		return r.finishInternal(ctx, call, "the call is running without an attempt or tool snapshot")
	}
	if st, ok := r.decided.get(call); ok {
		return r.afterStep(ctx, call, st, nil) // its end waits for its Pods (toolcall_stopping.go)
	}
	st, err := r.executorFor(executor.Current(call)).Observe(ctx, call)
	return r.afterStep(ctx, call, st, err)
}

// afterStep acts on what an executor's step came to: finish an ended attempt, end a call
// whose attempt could not start, or wait.
func (r *Reconciler) afterStep(ctx context.Context, call *v1alpha1.ToolCall, st executor.Step, err error) (ctrl.Result, error) {
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
	if showWaiting(r, call, st.Waiting) {
		if err := r.status.writeStatus(ctx, call); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: st.Requeue}, nil
}

// showWaiting shows in the Executed condition whether the attempt waits for admission
// (WaitingForAdmission, w's message) or, having waited, was admitted (Running again). In
// memory; true when it changed the condition (the caller writes).
func showWaiting(r *Reconciler, call *v1alpha1.ToolCall, w *executor.Waiting) bool {
	cond := meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionExecuted)
	waitingShown := cond != nil && cond.Reason == v1alpha1.ReasonWaitingForAdmission
	switch {
	case w != nil && (!waitingShown || cond.Message != w.Message):
		r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionUnknown, v1alpha1.ReasonWaitingForAdmission, w.Message)
		return true
	case w == nil && waitingShown:
		r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionUnknown, v1alpha1.ReasonRunning,
			fmt.Sprintf("attempt %d was admitted and runs", executor.CurrentAttempt(call)))
		return true
	}
	return false
}

// tidyExecutions lets every executor delete what the call's recorded attempts left (call
// nil: the call is gone) and returns when the next kept object is due (0: none).
func (r *Reconciler) tidyExecutions(ctx context.Context, key types.NamespacedName, call *v1alpha1.ToolCall) (time.Duration, error) {
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

// attemptDeadline is when the operator ends an attempt nobody reported on, as the features
// see it (an egress grant lasts until then, a workspace claim is waited for until then):
// for a call whose Job may wait for admission, the latest it can end, its bound on the
// wait included (the Job executor itself counts the timeout from admission: jobDeadline),
// and the start allowance a Job's activeDeadlineSeconds adds (the tool may start that late).
func (r *Reconciler) attemptDeadline(call *v1alpha1.ToolCall) time.Time {
	return executor.AttemptDeadline(call, r.Clock.Now(), r.Options.JobGrace()).Add(admissionWait(r.Client, r.Options, call))
}

// admissionWait is the bound on the wait for admission of the call's Jobs (0: they start
// at once). Read from the cache (the scopes); when it cannot be read, the operator's bound
// when its flags put Jobs behind a gate, so that a deadline is never too early.
func admissionWait(c client.Reader, o options.Call, call *v1alpha1.ToolCall) time.Duration {
	a, err := startgate.Resolve(context.Background(), c, call, o.Admission)
	switch {
	case err != nil && (o.Admission.Queue != "" || o.Admission.MaxConcurrentStarts > 0):
		return o.Admission.MaxWait
	case err != nil || a == nil:
		return 0
	}
	return a.MaxWait
}
