/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package pipeline

import "time"

// Reason is a machine-readable cause attached to a stage's Decision or to a Result.
// The values are stable strings meant to be copied into status conditions and results.
type Reason string

// Reasons of the admission stages (freeze, validate, pre-execute, guard).
const (
	// ReasonFrozen: the arguments were canonicalised and digested.
	ReasonFrozen Reason = "Frozen"
	// ReasonValid: the arguments satisfy the parameters schema.
	ReasonValid Reason = "Valid"
	// ReasonPolicyAllowed: no PreExecute or Guard policy lowered the verdict.
	ReasonPolicyAllowed Reason = "PolicyAllowed"
	// ReasonArgumentsNotObject: the arguments could not be canonicalised as a JSON object
	// (syntax, duplicate key, invalid UTF-8, lone surrogate, nesting too deep, not an object).
	ReasonArgumentsNotObject Reason = "ArgumentsNotObject"
	// ReasonArgumentsTooLarge: the arguments exceed the configured size limit.
	ReasonArgumentsTooLarge Reason = "ArgumentsTooLarge"
	// ReasonSchemaViolation: the arguments do not satisfy the tool's parameters schema.
	ReasonSchemaViolation Reason = "SchemaViolation"
	// ReasonSchemaInvalid: the tool's own schema does not compile (a registration problem).
	ReasonSchemaInvalid Reason = "SchemaInvalid"
	// ReasonPolicyDenied: a PreExecute policy rule denied the call.
	ReasonPolicyDenied Reason = "PolicyDenied"
	// ReasonPolicyError: a policy failed to compile, to evaluate or ran over its cost
	// limit; the pipeline fails closed.
	ReasonPolicyError Reason = "PolicyError"
	// ReasonGuardDenied: a Guard policy (or an external guard) lowered the verdict to Deny.
	ReasonGuardDenied Reason = "GuardDenied"
	// ReasonNotASubject: the requester is not a subject of the call's scope chain.
	ReasonNotASubject Reason = "NotASubject"
	// ReasonRuntimeClassRequired: a scope on the call's chain requires a RuntimeClass the
	// tool would not run under.
	ReasonRuntimeClassRequired Reason = "RuntimeClassRequired"
)

// Reasons of the approval decision.
const (
	// ReasonAwaitingApproval: a rule returned Ask, or the call is parked and its approval
	// window is still open.
	ReasonAwaitingApproval Reason = "AwaitingApproval"
	// ReasonApproved: a valid approval for the frozen arguments was given.
	ReasonApproved Reason = "Approved"
	// ReasonApprovalDenied: the approver refused the call (or the approval was unusable).
	ReasonApprovalDenied Reason = "ApprovalDenied"
	// ReasonApprovalDigestMismatch: the approval names other arguments than the frozen ones.
	ReasonApprovalDigestMismatch Reason = "ApprovalDigestMismatch"
	// ReasonApprovalTimeout: no approval arrived within the approval window.
	ReasonApprovalTimeout Reason = "ApprovalTimeout"
	// ReasonSelfApproval: the approver is the requester of the call; the approval is ignored.
	ReasonSelfApproval Reason = "SelfApproval"
	// ReasonApprovalCallMismatch: the approval answers another call (its callUID is not the
	// call's uid, e.g. an earlier call of the same name); it is ignored.
	ReasonApprovalCallMismatch Reason = "ApprovalCallMismatch"
	// ReasonApprovalStale: the approval was created before the call was parked; it is ignored.
	ReasonApprovalStale Reason = "ApprovalStale"
	// ReasonApprovalAlreadyConsumed: the approval already decided another call; it is ignored.
	ReasonApprovalAlreadyConsumed Reason = "ApprovalAlreadyConsumed"
)

// Reasons of scoped resolution.
const (
	// ReasonToolNotFound: no layer visible from the scope registers the name.
	ReasonToolNotFound Reason = "ToolNotFound"
	// ReasonToolRestricted: a scope on the chain does not permit the tool.
	ReasonToolRestricted Reason = "ToolRestricted"
	// ReasonToolNotReady: the registration that wins resolution is not ready.
	ReasonToolNotReady Reason = "ToolNotReady"
	// ReasonScopeCycle: the scope's parent chain loops.
	ReasonScopeCycle Reason = "ScopeCycle"
	// ReasonUnknownScope: the call names a scope that does not exist.
	ReasonUnknownScope Reason = "UnknownScope"
	// ReasonUnknownParent: a scope on the chain names a parent that does not exist.
	ReasonUnknownParent Reason = "UnknownParent"
	// ReasonDuplicateName: a newer registration of a name already registered in the same layer.
	ReasonDuplicateName Reason = "DuplicateName"
)

// Reasons of execution outcomes and results.
const (
	// ReasonSucceeded: the tool ran and its result was accepted.
	ReasonSucceeded Reason = "Succeeded"
	// ReasonDeadlineExceeded: the tool ran over its time limit.
	ReasonDeadlineExceeded Reason = "DeadlineExceeded"
	// ReasonOOMKilled: the tool ran out of memory.
	ReasonOOMKilled Reason = "OOMKilled"
	// ReasonEvicted: the tool's Pod was evicted before it finished.
	ReasonEvicted Reason = "Evicted"
	// ReasonImageNeverStarted: the tool's container never started (image pull or
	// container creation failure).
	ReasonImageNeverStarted Reason = "ImageNeverStarted"
	// ReasonCredentialMissing: the tool's container could not start because a Secret or
	// key its credentials name is missing in the call's namespace; the body never ran.
	ReasonCredentialMissing Reason = "CredentialMissing"
	// ReasonCredentialTooShort: a credential the tool is given is shorter than the runner
	// can redact meaningfully; the runner refused to run the body.
	ReasonCredentialTooShort Reason = "CredentialTooShort"
	// ReasonJobDeleted: the tool's Job or Pod was deleted before it finished.
	ReasonJobDeleted Reason = "JobDeleted"
	// ReasonCancelled: the call was cancelled before it ended (see Cancelled).
	ReasonCancelled Reason = "Cancelled"
	// ReasonDeleted: the call was deleted before it ended (see Deleted).
	ReasonDeleted Reason = "Deleted"
	// ReasonExecutionRejected: Kubernetes refused to create the tool's Job (an invalid
	// object, a quota, an admission policy or webhook, an API server that kept failing);
	// the body never ran.
	ReasonExecutionRejected Reason = "ExecutionRejected"
	// ReasonExecutionLost: the attempt ended in a way the operator cannot read as "the
	// tool container exited and here is the runner's frame": the Pod vanished, the node
	// was lost or shut down, the Job or Pod failed for a reason without a result of its
	// own, or the container ended without a frame. The Kubernetes reason is in meta.
	ReasonExecutionLost Reason = "ExecutionLost"
	// ReasonResultUnreadable: the tool container left a frame the operator could not
	// trust: unsigned or wrongly signed (the body may have written it), malformed, larger
	// than the call's output limit allows, or not read in time from the log.
	ReasonResultUnreadable Reason = "ResultUnreadable"
	// ReasonNonZeroExit: the tool exited with a non-zero code.
	ReasonNonZeroExit Reason = "NonZeroExit"
	// ReasonOutputNotUTF8: the tool's output is not valid UTF-8.
	ReasonOutputNotUTF8 Reason = "OutputNotUTF8"
	// ReasonOutputTooLarge: the tool's output is over the output limit.
	ReasonOutputTooLarge Reason = "OutputTooLarge"
	// ReasonOutputTruncated: the output was cut at the limit and accepted as partial text.
	ReasonOutputTruncated Reason = "OutputTruncated"
	// ReasonToolError: the tool's body itself returned {"isError": true, ...}.
	ReasonToolError Reason = "ToolError"
	// ReasonResultAccepted: PostExecute policies and the output schema accepted the result.
	ReasonResultAccepted Reason = "ResultAccepted"
	// ReasonResultBlocked: a PostExecute policy blocked the result.
	ReasonResultBlocked Reason = "ResultBlocked"
	// ReasonResultRedacted: a PostExecute policy replaced (redacted) the content.
	ReasonResultRedacted Reason = "ResultRedacted"
	// ReasonOutputSchemaViolation: the content does not satisfy the tool's output schema.
	ReasonOutputSchemaViolation Reason = "OutputSchemaViolation"
	// ReasonOutputSchemaInvalid: the tool's output schema does not compile, so the content
	// could not be checked; the result is withheld (see Withhold).
	ReasonOutputSchemaInvalid Reason = "OutputSchemaInvalid"
)

// Decision is the outcome of one stage: a verdict, the reason behind it and a human
// sentence. The zero Decision (empty Verdict) means "stage not evaluated".
type Decision struct {
	// Verdict is Allow, Ask or Deny; empty when the stage was not reached.
	Verdict Verdict
	// Reason is the machine-readable cause.
	Reason Reason
	// Message is a human sentence for status conditions. It may name policies and rules:
	// it is for operators, not for the model.
	Message string
	// Feedback is what the model may see of a refusal whose Message names host
	// configuration (an operator's limit): DESIGN rule 4 keeps that out of the result.
	// Empty: the caller words the result as it does for the reason.
	Feedback string
	// Policy and Rule name what decided, when a policy did.
	Policy string
	Rule   string
	// ApprovalWindow is set when Verdict is Ask and a policy set a window; zero means the
	// caller's default (Tool setting or DefaultApprovalWindow).
	ApprovalWindow time.Duration
}

// Evaluated reports whether the stage ran.
func (d Decision) Evaluated() bool { return d.Verdict != "" }

func allow(msg string) Decision {
	return Decision{Verdict: Allow, Reason: ReasonPolicyAllowed, Message: msg}
}

func deny(r Reason, msg string) Decision {
	return Decision{Verdict: Deny, Reason: r, Message: msg}
}
