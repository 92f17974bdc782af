// Package feature is the seam between the executors and what a tool may ask of its
// sandbox beyond running a body: a session workspace, credentials, egress through the
// proxy, a runtime class. Each is one Feature, in its own package, built from the narrow
// dependencies it needs; the reconciler and the executors call them through List, a loop,
// and never name one. Each executor says once which features it supports (Set, returned by
// executor.Executor.Supports); a tool that uses a feature an executor does not support never
// runs there. As kueue's jobframework lets a job kind add optional interfaces
// (JobWithPriorityClass, ...), a Feature is Name and Uses plus the hooks it needs.
package feature

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
)

// Name names a feature in an executor's support table (executor.Executor.Supports).
type Name = executor.FeatureName

// Set is a set of features: what an executor supports, or what a tool uses.
type Set = executor.FeatureSet

// The features.
const (
	// Workspace is a session workspace mounted at /workspace (sandbox.workspace).
	Workspace Name = "workspace"
	// Credentials are Secret values handed to the body (body.env[].valueFrom, body.secretFiles).
	Credentials Name = "credentials"
	// Egress is egress to named hosts through the egress proxy (sandbox.egress).
	Egress Name = "egress"
	// RuntimeClass is the RuntimeClass a tool's Pods run under, and scopes that require one.
	RuntimeClass Name = "runtimeClass"
)

// Names are every feature, in the order List runs them.
var Names = []Name{RuntimeClass, Credentials, Egress, Workspace}

// Feature is one capability a tool may use: its name and whether a tool spec uses it (a
// pure function of the spec, so that a pool reconciler can ask it of a Tool). What a feature
// does is in the hook interfaces below it implements.
type Feature interface {
	Name() Name
	Uses(spec *v1alpha1.ToolSpec) bool
}

// Admission is what a feature sees of a call at admission, after its tool resolved.
type Admission struct {
	// Index is the admission's registry (scopes and their rules).
	Index *pipeline.Index
	// Call is the call; Spec its resolved tool's spec.
	Call *v1alpha1.ToolCall
	Spec *v1alpha1.ToolSpec
}

// Admitter refuses a call at admission (every call, whatever it uses): a Deny ends the call
// through admission's refusal with the decision's reason; its Feedback is what the model reads.
type Admitter interface {
	Admit(a Admission) pipeline.Decision
}

// InputPreparer prepares the attempt's Pod before it is built (the builder's input). Not
// ok: st (an outcome or a refusal) or err is what this pass comes to.
type InputPreparer interface {
	PrepareInput(ctx context.Context, call *v1alpha1.ToolCall, attempt int32, in *podspec.Input) (st executor.Step, ok bool, err error)
}

// Pod is an attempt's Pod once built: its spec, and the labels of every object that
// describes it (a Job's and its template's).
type Pod struct {
	Spec   *corev1.PodSpec
	Labels []map[string]string
}

// Prestarter is implemented by a feature whose tools share something per session (the
// workspace: its files): a session's Pods of other tools that use it may be started
// alongside its first call (feature.List.Prestartable), unless the feature says a tool's
// Pod depends on its call (Prestartable false).
type Prestarter interface {
	Prestartable(spec *v1alpha1.ToolSpec) bool
}

// PodPreparer prepares the built Pod right before it is created (after the isolation
// check and the attempt's key). Not ok: st or err is what this pass comes to.
type PodPreparer interface {
	PreparePod(ctx context.Context, call *v1alpha1.ToolCall, pod Pod) (st executor.Step, ok bool, err error)
}

// RunningWatcher is told of the attempt's Pod while it runs; retry > 0 asks to be told
// again that soon.
type RunningWatcher interface {
	Running(ctx context.Context, call *v1alpha1.ToolCall, pod *corev1.Pod) (retry time.Duration)
}

// PodClassifier reads an ending only the feature knows from a Pod that has not ended by
// itself (every Pod, whatever its tool uses: a feature's objects may reach a Pod of a tool
// that does not declare it). Pure.
type PodClassifier interface {
	ClassifyPod(pod *corev1.Pod) (reason, detail string, ended bool)
}

// EndingClassifier may replace an attempt's outcome with a refusal that says better why
// it never ran (ok: use st).
type EndingClassifier interface {
	ClassifyEnding(ctx context.Context, call *v1alpha1.ToolCall, o pipeline.Outcome) (st executor.Step, ok bool)
}

// AfterEnder runs once an attempt ended (its status in memory, written by the caller): n
// is the attempt's index in status.attempts.
type AfterEnder interface {
	AfterEnd(ctx context.Context, call *v1alpha1.ToolCall, n int)
}

// SessionOrderer decides whether a call of the tool may run beside its session's other
// calls (decided false: the tool's concurrencySafe decides).
type SessionOrderer interface {
	SessionSafe(spec *v1alpha1.ToolSpec) (safe, decided bool)
}

// NetworkPolicies are the NetworkPolicies a feature adds to a namespace's isolation, and
// their names (the isolation check allows their egress).
type NetworkPolicies interface {
	Policies(namespace string) []*networkingv1.NetworkPolicy
	PolicyNames() []string
}
