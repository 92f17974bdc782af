// Package executor is the seam between the ToolCall reconciler and the backends that run a
// call's attempts (stage 5): a Job made for the attempt, a claimed warm pool Pod, and
// whatever comes next. The reconciler chooses an executor once per attempt and from then on
// talks to it only through Executor, as kueue's jobframework drives every job kind through
// GenericJob. An executor never writes a call's status: it mutates the attempt it is handed
// in memory (Claim) and returns what its start or observation came to (Step); the
// reconciler writes.
package executor

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

// Executor runs a call's attempts, one at a time, on one backend.
type Executor interface {
	// Path is the value of status.attempts[].path of the attempts this executor runs.
	Path() v1alpha1.ExecutionPath
	// Supports is the executor's support table: the features (controllers/feature) whose
	// tools it can run. It never runs an attempt of a tool that uses another; whatever else
	// says what an executor cannot do (a pool kept for it, its claim) derives from this.
	Supports() FeatureSet
	// Claim offers the call's new attempt a (in memory, the last of status.attempts) to this
	// executor: ok when it takes it, after recording in a whatever it needs to find the
	// attempt again (path, Job or Pod name); where says where it runs ("Job x"). It may act
	// on the cluster (the warm executor claims a pool Pod) but writes no status; the caller
	// does, then calls Start.
	Claim(ctx context.Context, call *v1alpha1.ToolCall, a *v1alpha1.Attempt) (where string, ok bool)
	// Start runs the call's current attempt, idempotently: an attempt a lost pass already
	// started is adopted, never started twice.
	Start(ctx context.Context, call *v1alpha1.ToolCall) (Step, error)
	// Observe reads the current attempt: a Step with the outcome once it ended.
	Observe(ctx context.Context, call *v1alpha1.ToolCall) (Step, error)
	// Stop asks the running attempt to end (spec.cancel, the call's deletion) and says what
	// it stopped ("Job x deleted"); "" when nothing had started. It is called again on every
	// pass until the attempt's Pods have stopped, so it must be idempotent; a body may run on
	// for its grace period after it returned.
	Stop(ctx context.Context, call *v1alpha1.ToolCall) (string, error)
	// Release lets go of the attempt ended once its outcome is written (a Job whose Pod will
	// not end by itself is deleted; a used warm Pod is deleted).
	Release(ctx context.Context, call *v1alpha1.ToolCall, ended v1alpha1.Attempt, o pipeline.Outcome)
	// Tidy runs on every pass, call nil when the call is gone: what recorded attempts left
	// behind is deleted once it is no longer needed. It returns how long until the next
	// thing it keeps is due (0: none).
	Tidy(ctx context.Context, key types.NamespacedName, call *v1alpha1.ToolCall) (time.Duration, error)
}

// PodWaiters is implemented by an executor whose calls may wait on a Pod that carries no
// mark of them (StoppingPods: a session Pod being deleted): it names the calls that wait on
// the Pod with key pod, so that the Pod's events wake them as an attempt's own Pod's do.
type PodWaiters interface {
	PodWaiters(pod types.NamespacedName) []types.NamespacedName
}

// FeatureName names a feature (controllers/feature: feature.Name) in a support table.
type FeatureName string

// FeatureSet is a set of features: what an executor supports, or what a tool uses.
type FeatureSet []FeatureName

// Has reports whether n is in s.
func (s FeatureSet) Has(n FeatureName) bool { return slices.Contains(s, n) }

// Missing is the first feature of used that s lacks ("" when s covers used).
func (s FeatureSet) Missing(used FeatureSet) FeatureName {
	for _, n := range used {
		if !s.Has(n) {
			return n
		}
	}
	return ""
}

// Step is what an executor's Start or Observe came to.
type Step struct {
	// Outcome is the attempt's end, to normalise and finish (retry or freeze the result).
	Outcome *pipeline.Outcome
	// Refused ends the call without an outcome: the attempt could not be started.
	Refused *Refusal
	// ContainerStart is when the tool container started, for the trace (zero: unknown).
	ContainerStart time.Time
	// Requeue is when to look again when nothing wakes the call sooner.
	Requeue time.Duration
	// Waiting, when set, says the attempt has not started: its Job waits, suspended, for
	// admission (Kueue or the operator's start bound). The reconciler shows it in the
	// Executed condition (WaitingForAdmission) until a step without it.
	Waiting *Waiting
}

// Waiting is an attempt's wait for admission.
type Waiting struct {
	// Message is the Executed condition's message: what it waits for, and for how long at
	// most. Stable while it waits: the status is written when it changes.
	Message string
}

// Refusal is why an attempt could not start, and everything the reconciler writes when it
// ends the call for it: every refused start (isolation missing, a workspace the call cannot
// have, a Job the API server refused, an internal error) ends through this one type and the
// reconciler's one path.
type Refusal struct {
	// Reason is one of the API's reasons: the attempt's, the Executed condition's and the
	// result's.
	Reason string
	// Message is the model-facing sentence of the isError result: never host configuration.
	Message string
	// Detail is for people, never for the model: the Executed condition and the log (what
	// was refused, why isolation is missing, the API server's message).
	Detail string
	// Meta is added to the result's _meta (e.g. the attempt, the API server's reason).
	Meta map[string]string
	// Event, when set, is recorded on the call once the refusal is written.
	Event *Event
}

// Event is a Kubernetes Event recorded on the call.
type Event struct {
	// Type is corev1.EventTypeNormal or EventTypeWarning.
	Type string
	// Reason and Action are the event's reason and action; Note its message.
	Reason, Action, Note string
}

// InternalMessage is what the model reads when the operator could not run a call.
const InternalMessage = "the call could not be run"

// Refuse is the Step that ends the call with r.
func Refuse(r Refusal) Step { return Step{Refused: &r} }

// Internal ends the call OperatorError: detail says, to people only, what went wrong.
func Internal(detail string) Step {
	return Refuse(Refusal{Reason: v1alpha1.ReasonOperatorError, Message: InternalMessage, Detail: detail})
}
