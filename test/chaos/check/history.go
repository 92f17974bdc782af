// Package check reads the whole history of a chaos run against toolgate — every ToolCall
// version the API server served, the Jobs and Pod starts of every attempt, the Events and
// the ToolCallApprovals — and checks the operator's promises against it: every call ends,
// at most one Job and one Pod start per attempt, no more attempts than the retry policy,
// a result never changes once written, a Deny is final, an approval answers one call, no
// Pod appears for a Job while it is suspended (waiting for admission), a call refused
// NotAdmitted never ran, and every call ends the way its script says it must.
//
// It knows nothing of how the history was made: the envtest harness (test/chaos) and the
// real-cluster run fill the same History (Recorder watches ToolCalls, Jobs and Pods of any
// cluster) and call Check.
package check

import (
	"slices"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// History is everything a run left behind, read after the last fault.
type History struct {
	// Calls are the ToolCalls as finally listed.
	Calls []v1alpha1.ToolCall
	// Versions is the watch history of ToolCalls: every version the API server served
	// (ADDED, MODIFIED, DELETED), in the order received. Recorder fills it.
	Versions []CallVersion
	// WatchGaps counts the times the ToolCall watch had to re-list (its resourceVersion
	// was too old): versions between the two may be missing, which weakens (never fails)
	// the result and verdict checks.
	WatchGaps int
	// Jobs are the tool Jobs ever seen (each UID once), deleted ones included.
	Jobs []JobRecord
	// PodStarts are the tool Pods started, per call and attempt: the simulated kubelet's
	// own record in envtest, the Pods seen on a real cluster.
	PodStarts []PodStart
	// Pods are the tool Pods the Recorder saw (each uid once, its first version seen, with
	// that version's resourceVersion): set by Recorder.History, kept when a harness replaces
	// PodStarts with a kubelet's record. The admission rules read them with Jobs' versions.
	Pods []PodStart
	// SessionHandovers are the Handovers session Pods received (the simulated kubelet's
	// record in envtest; empty on a real cluster, where only the Pods can see them).
	SessionHandovers []SessionHandover
	// Kills are when each operator process was killed (SIGKILL sent), in order: an
	// Expectation's IfKilled ending is allowed only for a call one of them fell into.
	Kills []time.Time
	// Events are the events.k8s.io Events of the run's namespaces.
	Events []eventsv1.Event
	// Approvals are the ToolCallApprovals as finally listed.
	Approvals []v1alpha1.ToolCallApproval
	// Expectations say, per call (namespace/name), how the script says it must end. A
	// call without one is checked only against the rules that need no script.
	Expectations map[types.NamespacedName]Expectation
	// LastFault is when the last fault (operator kill, API server restart) ended; zero
	// when none. Time to terminal is measured from it.
	LastFault time.Time
	// TerminalBound, when positive, is how long after LastFault every call must have been
	// seen terminal.
	TerminalBound time.Duration
}

// CallVersion is one ToolCall version as a watch delivered it.
type CallVersion struct {
	// Type is the watch event type: ADDED, MODIFIED or DELETED (a re-list reports ADDED).
	Type string `json:"type"`
	// Observed is when the harness received it (its own clock).
	Observed time.Time `json:"observed"`
	// Call is the object as served.
	Call v1alpha1.ToolCall `json:"call"`
}

// JobRecord is one tool Job the run saw.
type JobRecord struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// Call is the call's name (annotation toolgate.dev/call-name), CallUID its controller
	// owner's uid.
	Call    string    `json:"call"`
	CallUID types.UID `json:"callUID"`
	// Attempt is the label toolgate.dev/attempt (0 when absent or not a number).
	Attempt int       `json:"attempt"`
	Created time.Time `json:"created"`
	// Queue is the Kueue LocalQueue the Job was submitted to (label
	// kueue.x-k8s.io/queue-name); empty when none.
	Queue string `json:"queue,omitempty"`
	// Versions are the Job's versions where spec.suspend changed (the first one seen
	// included), in the order received: when it waited and when it was resumed.
	Versions []JobVersion `json:"versions,omitempty"`
	// Deleted: the Job was seen with a deletionTimestamp or deleted.
	Deleted bool `json:"deleted,omitempty"`
	// Relisted: the Job watch re-listed (a gap) while the Job existed, so a change of its
	// suspend may be missing from Versions; the suspended-start rule does not judge it.
	Relisted bool `json:"relisted,omitempty"`
}

// JobVersion is one version of a Job as far as admission goes.
type JobVersion struct {
	ResourceVersion string    `json:"resourceVersion"`
	Suspended       bool      `json:"suspended"`
	Observed        time.Time `json:"observed"`
}

// PodStart is one start of a tool Pod: the body ran (or began to) once more.
type PodStart struct {
	Namespace string    `json:"namespace"`
	Pod       string    `json:"pod"`
	PodUID    types.UID `json:"podUID,omitempty"`
	Job       string    `json:"job"`
	JobUID    types.UID `json:"jobUID,omitempty"`
	Call      string    `json:"call"`
	CallUID   types.UID `json:"callUID"`
	Attempt   int       `json:"attempt"`
	At        time.Time `json:"at"`
	// ResourceVersion is the Pod's first version seen (its creation's when the watch
	// delivered the ADDED): a Recorder's Pods only.
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// SessionHandover is one Handover a session Pod received: one more run of the attempt's
// body in that Pod, unless Refused (the Pod's runner refused it; the body did not run).
type SessionHandover struct {
	Namespace string    `json:"namespace"`
	Pod       string    `json:"pod"`
	PodUID    types.UID `json:"podUID"`
	CallUID   types.UID `json:"callUID"`
	Attempt   int       `json:"attempt"`
	At        time.Time `json:"at"`
	Refused   bool      `json:"refused,omitempty"`
}

// Approval says how the harness answered a call that must wait for approval.
type Approval string

const (
	// NoApproval: the call never asks (its policy allows or denies outright).
	NoApproval Approval = ""
	// Approve: an approver approves it.
	Approve Approval = "Approve"
	// Deny: an approver denies it.
	Deny Approval = "Deny"
	// Unanswered: nobody answers; the window closes.
	Unanswered Approval = "Unanswered"
)

// Expectation is what the script says of one call.
type Expectation struct {
	// Scenario names the kind of call, for the report ("unsafe-session", "approve", …).
	Scenario string `json:"scenario"`
	// Phase is the terminal phase the call must end in.
	Phase v1alpha1.ToolCallPhase `json:"phase"`
	// Reasons are the result reasons allowed (any of them); empty requires an empty
	// reason (a success).
	Reasons []string `json:"reasons,omitempty"`
	// MaxAttempts is the tool's retry.maxAttempts (0 reads it from the call's snapshot).
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// MinAttempts is the fewest attempts the call must have made (a scripted retry that
	// ends in success took at least two).
	MinAttempts int `json:"minAttempts,omitempty"`
	// MustNotRun says no Job may exist and no Pod may start for the call (a denial).
	MustNotRun bool `json:"mustNotRun,omitempty"`
	// Approval is how the harness answered it.
	Approval Approval `json:"approval,omitempty"`
	// IfKilled is one more ending allowed only when an operator process was killed
	// (History.Kills) while the call's last attempt ran: from its startTime (less a second:
	// the field is written to the second) to when the call was first seen terminal. A
	// session call whose operator died while it ran in its session Pod ends Failed
	// (JobDeleted, the attempt PodDeleted): its outcome is unknown and it is never handed
	// over again.
	IfKilled *Ending `json:"ifKilled,omitempty"`
}

// Ending is a terminal phase and the result reasons allowed with it.
type Ending struct {
	Phase   v1alpha1.ToolCallPhase `json:"phase"`
	Reasons []string               `json:"reasons,omitempty"`
	// Executed, when set, must be part of the call's Executed condition message: the
	// operator's words for why it ended so (which path of the operator ended it).
	Executed string `json:"executed,omitempty"`
}

// allows says whether the ending matches phase and reason (no Reasons: an empty reason).
func (e Ending) allows(phase v1alpha1.ToolCallPhase, reason string) bool {
	return phase == e.Phase && (slices.Contains(e.Reasons, reason) || (len(e.Reasons) == 0 && reason == ""))
}
