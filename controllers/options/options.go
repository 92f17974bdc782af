// Package options holds the operator-wide settings of the ToolCall pipeline: what the
// manager's flags set and every controller package reads (the reconciler, the executors,
// retention). It imports the packages whose settings it gathers, never a reconciler.
package options

import (
	"time"

	"github.com/toolgate/toolgate/controllers/egressgrant"
	"github.com/toolgate/toolgate/controllers/netisolation"
	"github.com/toolgate/toolgate/controllers/startgate"
	"github.com/toolgate/toolgate/controllers/workspace"
	"github.com/toolgate/toolgate/internal/podspec"
)

// Call are the operator-wide settings of the ToolCall pipeline.
type Call struct {
	// Job configures the Jobs that run tool bodies.
	Job podspec.Options
	// MaxArgumentBytes bounds a call's arguments (pipeline default when zero). The arguments
	// reach the body in one environment variable, which Linux bounds at 128 KiB.
	MaxArgumentBytes int
	// DeadlineGrace is added to an attempt's timeout before the operator itself ends an
	// attempt that no Job or Pod reported on: the last line of "every call ends". It also
	// bounds how long, after its grace period, a stopped attempt's Pod that has not confirmed
	// it stopped holds its call (toolcall_stopping.go).
	DeadlineGrace time.Duration
	// JobRetention is how long a Job (and its Pod, for logs) is kept after its attempt's
	// outcome was recorded; then the operator deletes it. Tool Jobs have no
	// ttlSecondsAfterFinished: nothing else deletes a Job whose result is not recorded.
	JobRetention time.Duration
	// Workers is how many calls are reconciled at once (different calls only).
	Workers int
	// LogReadTimeout bounds one pods/log read of a result carried in the Pod log; a read
	// that takes longer ends the attempt ResultUnreadable.
	LogReadTimeout time.Duration
	// NetworkPolicy says how sandbox.network is made real before a Job is created.
	NetworkPolicy netisolation.Options
	// EgressProxy points tools with sandbox.egress at the egress proxy (controllers/egressgrant).
	EgressProxy egressgrant.ProxyOptions
	// Retention says when finished calls are deleted and what the audit record holds.
	Retention Retention
	// Workspace configures session workspaces (controllers/workspace).
	Workspace workspace.Options
	// Admission says which Jobs wait, created suspended, for Kueue or the operator's start
	// bound before they start, and for how long at most (controllers/startgate).
	Admission startgate.Options
	// Session configures session sandbox Pods (controllers/executor/sessionexec).
	Session Session
	// TestHoldBeforeJobCreate is test-only (--test-hold-before-job-create, docs/operations.md):
	// when positive, the Job executor waits this long between an attempt's status write and
	// its Job create for calls labelled podcontract.LabelTestHold, so that the e2e suite can
	// stop the leader in that window. 0 (the default): off.
	TestHoldBeforeJobCreate time.Duration
}

// JobGrace is what a Job attempt's deadline adds to the tool's timeout: the start
// allowance its activeDeadlineSeconds adds (the tool may start that late) and DeadlineGrace.
func (c Call) JobGrace() time.Duration { return c.Job.Allowance() + c.DeadlineGrace }

// Session configures session sandbox Pods: how long one is kept idle, how many may run,
// and who may reach their signers.
type Session struct {
	// IdleTimeout is how long a session Pod is kept after its last call ended when its
	// scope says nothing (--session-idle-timeout); IdleCeiling caps any scope's
	// (--session-idle-ceiling).
	IdleTimeout, IdleCeiling time.Duration
	// MaxPerNamespace and MaxPerRequester cap the session Pods of one namespace and of one
	// requester (all namespaces); a call past a cap runs in a Pod of its own (cold).
	MaxPerNamespace, MaxPerRequester int
	// OperatorNamespace and OperatorLabels select the operator's Pods: the only peers the
	// session Pods' NetworkPolicy lets reach their signers (empty namespace: any namespace).
	OperatorNamespace string
	OperatorLabels    map[string]string
}

// DefaultSession are the session settings used when the manager is given none.
func DefaultSession() Session {
	return Session{IdleTimeout: 5 * time.Minute, IdleCeiling: time.Hour, MaxPerNamespace: 50, MaxPerRequester: 20}
}

// DefaultCall are the settings used when the manager is given none.
func DefaultCall() Call {
	return Call{Job: podspec.DefaultOptions(), MaxArgumentBytes: 120 << 10, DeadlineGrace: 30 * time.Second,
		JobRetention: 10 * time.Minute, Workers: 16, LogReadTimeout: 10 * time.Second,
		NetworkPolicy: netisolation.DefaultOptions(), Retention: DefaultRetention(), Session: DefaultSession(),
		Admission: startgate.DefaultOptions()}
}

// Retention says how long finished calls are kept and what their audit record holds.
type Retention struct {
	// TTL is the operator-wide default ttlSecondsAfterFinished of calls whose spec and tool
	// set none; 0 keeps such calls forever (no default TTL).
	TTL time.Duration
	// MinTTL is the floor of a call's own spec.ttlSecondsAfterFinished: retention is the
	// platform's, so a caller may keep its call longer, never shorter than this (0: no
	// floor). It does not bound the tool's callTTLSecondsAfterFinished nor TTL, which the
	// platform sets itself.
	MinTTL time.Duration
	// MaxTTL is the ceiling of every TTL an object sets (the call's, raised to MinTTL, and
	// its tool's callTTLSecondsAfterFinished) and of an expiry already recorded: etcd's
	// room is the platform's, and an int32 of seconds reaches 2094. 0: no ceiling (the
	// manager refuses 0; TTL is checked against it when the flags are read).
	MaxTTL time.Duration
	// HistorySucceeded and HistoryFailed keep, per namespace, at most that many Succeeded
	// calls and Failed or Denied calls (the most recently finished); 0: no limit.
	HistorySucceeded, HistoryFailed int
	// AuditIncludeContent puts the arguments and the result content into the audit record.
	AuditIncludeContent bool
}

// DefaultMinTTL is the default floor of a call's own TTL: long enough for the client that
// waits on the call (the CLI, the MCP gateway) and a person who looks at it right after to
// read its frozen result, however short a TTL the caller asked for.
const DefaultMinTTL = 5 * time.Minute

// DefaultMaxTTL is the default ceiling of a call's TTL: a week, so that a review after a
// weekend or a holiday still finds the call, while agents asking for years cannot make etcd
// hold their calls past what it can: a day of 50,000 calls is ≈ 0.5 GiB in etcd
// (docs/retention.md), so a week is ≈ 3.5 GiB and a month ≈ 15 GiB, past etcd's largest
// recommended quota (8 GiB). What must outlive a week is in the audit record (the log).
const DefaultMaxTTL = 7 * 24 * time.Hour

// DefaultRetention keeps a finished call for 24 hours, at least 5 minutes and at
// most 7 days whatever the call or its tool asks, with no history limit.
func DefaultRetention() Retention {
	return Retention{TTL: 24 * time.Hour, MinTTL: DefaultMinTTL, MaxTTL: DefaultMaxTTL}
}

// Ceiling lowers ttl to MaxTTL, when there is one.
func (o Retention) Ceiling(ttl time.Duration) time.Duration {
	if o.MaxTTL > 0 {
		return min(ttl, o.MaxTTL)
	}
	return ttl
}
