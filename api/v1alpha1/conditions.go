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

package v1alpha1

// Condition types. Each ToolCall stage records one condition (docs/architecture.md, "The pipeline");
// registration kinds record Registered or Ready; a ToolCallApproval records Consumed.
// The values are plain strings so they go straight into metav1.Condition.
const (
	// ConditionResolved: the tool named by spec.tool was found and is visible in the call's scope.
	ConditionResolved = "Resolved"
	// ConditionArgumentsFrozen: the canonical arguments and their digest are recorded (stage 1).
	ConditionArgumentsFrozen = "ArgumentsFrozen"
	// ConditionArgumentsValid: the arguments satisfy the tool's parameters schema (stage 2).
	ConditionArgumentsValid = "ArgumentsValid"
	// ConditionAdmitted: the PreExecute policies allowed the call, or an approver did (stage 3).
	ConditionAdmitted = "Admitted"
	// ConditionGuarded: the Guard policies did not lower the verdict to Deny (stage 4).
	ConditionGuarded = "Guarded"
	// ConditionExecuted: the tool body ran to an outcome in a Job (stage 5).
	ConditionExecuted = "Executed"
	// ConditionResultAccepted: the PostExecute policies and the output schema accepted the result (stage 6).
	ConditionResultAccepted = "ResultAccepted"
	// ConditionNormalized: the outcome, success or failure, is expressed as one structured result (stage 7).
	ConditionNormalized = "Normalized"
	// ConditionCompleted: the result and its digest are frozen in status; the call is terminal (stage 8).
	ConditionCompleted = "Completed"

	// ConditionRegistered: a Tool or ClusterTool is valid and visible under its resolved name.
	ConditionRegistered = "Registered"
	// ConditionWarmPool: (ClusterTool) its warm pool is kept in every namespace of
	// spec.warmPool.namespaces; absent when the ClusterTool has no pool.
	ConditionWarmPool = "WarmPool"
	// ConditionReady: a ToolScope or ToolPolicy is valid and in effect.
	ConditionReady = "Ready"
	// ConditionConsumed: a ToolCallApproval was read by the controller and applied or refused.
	ConditionConsumed = "Consumed"
)

// Condition reasons, for metav1.Condition.Reason and, for failures, ToolResult.Reason.
// Every reason a controller writes (condition, result, attempt) is one of these; those of the
// pipeline's decisions and results have the same name and value as pipeline.Reason<Name>
// (reasons_test.go checks both).
const (
	// ReasonRegistered: the tool is registered under its resolved name.
	ReasonRegistered = "Registered"
	// ReasonPoolKept: (ClusterTool, WarmPool=True) every listed namespace holds the pool.
	ReasonPoolKept = "PoolKept"
	// ReasonNamespaceMissing: (ClusterTool, WarmPool=False) a namespace of
	// spec.warmPool.namespaces does not exist or is being deleted: it holds no pool until
	// it exists (the message names them).
	ReasonNamespaceMissing = "NamespaceMissing"
	// ReasonReady: the object is valid and in effect.
	ReasonReady = "Ready"
	// ReasonDuplicateName: an older tool with the same name already holds the name in this scope.
	ReasonDuplicateName = "DuplicateName"
	// ReasonSchemaInvalid: the tool's parameters or output is not a valid JSON Schema.
	ReasonSchemaInvalid = "SchemaInvalid"
	// ReasonPresentationInvalid: a presentation expression of the tool does not compile.
	ReasonPresentationInvalid = "PresentationInvalid"
	// ReasonPolicyCompileError: a rule expression of the policy does not compile or is not boolean.
	ReasonPolicyCompileError = "PolicyCompileError"
	// ReasonScopeCycle: the scope's parent chain loops back on itself.
	ReasonScopeCycle = "ScopeCycle"
	// ReasonUnknownParent: the scope's parent (or an ancestor's) does not exist.
	ReasonUnknownParent = "UnknownParent"
	// ReasonUnknownScope: the scope named by a Tool or ToolCall does not exist.
	ReasonUnknownScope = "UnknownScope"

	// ReasonFrozen: the arguments were canonicalised and digested.
	ReasonFrozen = "Frozen"
	// ReasonValid: the arguments satisfy the parameters schema.
	ReasonValid = "Valid"
	// ReasonResolved: the tool was found in the call's scope chain.
	ReasonResolved = "Resolved"
	// ReasonNotASubject: the requester is not among the subjects of a scope on the chain.
	ReasonNotASubject = "NotASubject"
	// ReasonRuntimeClassRequired: a scope on the chain requires a RuntimeClass (spec.
	// runtimeClassName) that the tool would not run under.
	ReasonRuntimeClassRequired = "RuntimeClassRequired"
	// ReasonToolNotFound: no tool of that name is registered anywhere on the scope chain.
	ReasonToolNotFound = "ToolNotFound"
	// ReasonToolRestricted: the tool exists but a scope on the chain does not permit it.
	ReasonToolRestricted = "ToolRestricted"
	// ReasonToolNotReady: the tool exists but is not Registered.
	ReasonToolNotReady = "ToolNotReady"
	// ReasonArgumentsNotObject: the arguments could not be canonicalised as a JSON object.
	ReasonArgumentsNotObject = "ArgumentsNotObject"
	// ReasonArgumentsTooLarge: the canonical arguments exceed the operator's size limit.
	ReasonArgumentsTooLarge = "ArgumentsTooLarge"
	// ReasonSchemaViolation: the arguments violate the tool's parameters schema.
	ReasonSchemaViolation = "SchemaViolation"
	// ReasonPolicyAllowed: the policies allowed the call.
	ReasonPolicyAllowed = "PolicyAllowed"
	// ReasonPolicyDenied: a PreExecute rule returned Deny.
	ReasonPolicyDenied = "PolicyDenied"
	// ReasonPolicyError: a rule failed to evaluate; the call is denied (fail closed).
	ReasonPolicyError = "PolicyError"
	// ReasonGuardDenied: a Guard rule lowered the verdict to Deny.
	ReasonGuardDenied = "GuardDenied"
	// ReasonAwaitingApproval: a rule returned Ask; the call waits for a ToolCallApproval.
	ReasonAwaitingApproval = "AwaitingApproval"
	// ReasonApproved: an approver approved the call.
	ReasonApproved = "Approved"
	// ReasonApprovalDenied: an approver denied the call.
	ReasonApprovalDenied = "ApprovalDenied"
	// ReasonApprovalDigestMismatch: the approval carries another arguments digest; it counts as a refusal.
	ReasonApprovalDigestMismatch = "ApprovalDigestMismatch"
	// ReasonApprovalTimeout: no approval arrived within the approval window; the call is denied.
	ReasonApprovalTimeout = "ApprovalTimeout"
	// ReasonSelfApproval: the approver is the requester; the approval is ignored.
	ReasonSelfApproval = "SelfApproval"
	// ReasonApprovalCallMismatch: (ToolCallApproval) the approval's spec.callUID is not the
	// call's uid (it answers an earlier call of the same name, or none); it is ignored.
	ReasonApprovalCallMismatch = "ApprovalCallMismatch"
	// ReasonApprovalStale: (ToolCallApproval) the approval was created before the call was
	// parked for approval; it is ignored.
	ReasonApprovalStale = "ApprovalStale"
	// ReasonApprovalAlreadyConsumed: (ToolCallApproval) the approval already decided another
	// call (status.consumedBy); it is ignored.
	ReasonApprovalAlreadyConsumed = "ApprovalAlreadyConsumed"
	// ReasonDigestMismatch: (ToolCallApproval) the approval's digest differs from the call's.
	ReasonDigestMismatch = "DigestMismatch"
	// ReasonApplied: (ToolCallApproval) the approval decided the call.
	ReasonApplied = "Applied"

	// ReasonQueued: (Executed=Unknown) an earlier call of the same session must finish first.
	ReasonQueued = "Queued"
	// ReasonWaitingForAdmission: (Executed=Unknown) the attempt's Job is created suspended
	// and waits for Kueue (or the operator's start bound) to admit it; the tool's timeout
	// has not started.
	ReasonWaitingForAdmission = "WaitingForAdmission"
	// ReasonNotAdmitted: (result, Executed=False) the attempt's Job waited past its bound
	// (ToolScope admission.maxWait) for admission and was deleted; the body never ran.
	ReasonNotAdmitted = "NotAdmitted"
	// ReasonRunning: (Executed=Unknown) the attempt's Job is created or about to be; the body runs.
	ReasonRunning = "Running"
	// ReasonStopping: (Executed=Unknown) the attempt was stopped (cancelled, deleted) or ended
	// without the runner's word, and a Pod of it still runs: its end is recorded once every
	// Pod of it is gone or has no container left running.
	ReasonStopping = "Stopping"
	// ReasonDeadlineExceeded: the body ran past the tool's timeout.
	ReasonDeadlineExceeded = "DeadlineExceeded"
	// ReasonOOMKilled: the body's container was killed for exceeding its memory limit.
	ReasonOOMKilled = "OOMKilled"
	// ReasonEvicted: the body's Pod was evicted from its node.
	ReasonEvicted = "Evicted"
	// ReasonImageNeverStarted: the body's image could not be pulled or its container never started.
	ReasonImageNeverStarted = "ImageNeverStarted"
	// ReasonCredentialMissing: a Secret or key the tool's credentials name (body.env
	// valueFrom, body.secretFiles) is missing in the call's namespace; the kubelet could not
	// start the body's container (CreateContainerConfigError) and the attempt ended at once.
	ReasonCredentialMissing = "CredentialMissing"
	// ReasonCredentialTooShort: a credential the body is given is shorter than 8 bytes,
	// too short to redact from its output; the runner did not run the body.
	ReasonCredentialTooShort = "CredentialTooShort"
	// ReasonNetworkIsolationMissing: the NetworkPolicies that isolate the tool's Pod as its
	// sandbox.network requires are missing (or opened up) in the call's namespace and the
	// operator could not, or was told not to, put them in place; no Job was created.
	ReasonNetworkIsolationMissing = "NetworkIsolationMissing"
	// ReasonJobDeleted: the attempt's Job disappeared before it reported an outcome.
	ReasonJobDeleted = "JobDeleted"
	// ReasonCancelled: the call was cancelled (spec.cancel) before it ended; its Job, if
	// any, was stopped and the result is an isError saying so.
	ReasonCancelled = "Cancelled"
	// ReasonDeleted: the call was deleted (by anyone: an admin, a namespace deletion) before
	// it ended; the operator stopped its body, if it ran, and recorded this result before it
	// let the call go.
	ReasonDeleted = "Deleted"
	// ReasonExecutionRejected: Kubernetes refused to create the attempt's Job (invalid, over a
	// quota, denied by an admission policy or webhook, or failing until the attempt's
	// deadline); the body never ran. The Executed condition carries the API server's message.
	ReasonExecutionRejected = "ExecutionRejected"
	// ReasonNonZeroExit: the body exited with a non-zero status.
	ReasonNonZeroExit = "NonZeroExit"
	// ReasonOutputNotUTF8: the body's output is not valid UTF-8.
	ReasonOutputNotUTF8 = "OutputNotUTF8"
	// ReasonOutputTooLarge: the body's output exceeds the sandbox's maxOutputBytes.
	ReasonOutputTooLarge = "OutputTooLarge"
	// ReasonOutputTruncated: the output was cut at the limit and accepted as partial text.
	ReasonOutputTruncated = "OutputTruncated"
	// ReasonToolError: the body itself returned {"isError": true, ...}.
	ReasonToolError = "ToolError"
	// ReasonOperatorError: the operator found the call in a state it cannot continue from.
	ReasonOperatorError = "OperatorError"
	// ReasonResultAccepted: the PostExecute policies accepted the result unchanged.
	ReasonResultAccepted = "ResultAccepted"
	// ReasonResultRedacted: a PostExecute rule replaced the result's content.
	ReasonResultRedacted = "ResultRedacted"
	// ReasonResultBlocked: a PostExecute rule blocked the result; the model sees the rule's message.
	ReasonResultBlocked = "ResultBlocked"
	// ReasonOutputSchemaViolation: the result's content violates the tool's output schema.
	ReasonOutputSchemaViolation = "OutputSchemaViolation"
	// ReasonOutputSchemaInvalid: the tool's output schema does not compile, so the result
	// could not be checked; it is withheld.
	ReasonOutputSchemaInvalid = "OutputSchemaInvalid"
	// ReasonPolicyUnavailable: the PostExecute policies could not be read yet; the result
	// waits (condition ResultAccepted=Unknown) and is withheld as PolicyError at the deadline.
	ReasonPolicyUnavailable = "PolicyUnavailable"
	// ReasonSucceeded: the call completed with a result the model may use.
	ReasonSucceeded = "Succeeded"
	// ReasonFailed: the call completed with an isError result.
	ReasonFailed = "Failed"
	// ReasonDenied: the call was denied before execution.
	ReasonDenied = "Denied"
)

// RetryableReasons returns the failure reasons a Tool's retry.onReasons may name
// (the same list as the CRD's enum).
func RetryableReasons() []string {
	return []string{
		ReasonDeadlineExceeded, ReasonOOMKilled, ReasonEvicted,
		ReasonNonZeroExit, ReasonImageNeverStarted, ReasonJobDeleted,
	}
}

// Reasons of attempts that ended without a result the runner vouched for.
const (
	// ReasonExecutionLost: the attempt ended in a way the operator cannot read as "the tool
	// container exited and here is the runner's frame" (the Pod vanished, its node was lost
	// or shut down, the Job or Pod failed for a reason without a result of its own, the
	// container ended without a frame); result meta kubernetesReason names the reason.
	ReasonExecutionLost = "ExecutionLost"
	// ReasonResultUnreadable: the tool container left a frame the operator could not trust:
	// not signed with the attempt's key (the body may have written it), malformed, larger
	// than the call's output limit allows, or not read from the Pod log in time.
	ReasonResultUnreadable = "ResultUnreadable"
)
