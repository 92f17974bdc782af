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

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// DefaultRunnerPath is where the runner lives in a tool image that carries it
// (spec.body.runnerInImage) when spec.body.runnerPath is empty.
const DefaultRunnerPath = podcontract.ImageRunner

// Verdict is the outcome of the policy stages for a call: permission only decreases,
// Allow → Ask → Deny.
// +kubebuilder:validation:Enum=Allow;Ask;Deny
type Verdict string

const (
	// VerdictAllow: the call may run.
	VerdictAllow Verdict = "Allow"
	// VerdictAsk: the call waits for a person's ToolCallApproval.
	VerdictAsk Verdict = "Ask"
	// VerdictDeny: the call is refused; final.
	VerdictDeny Verdict = "Deny"
)

// NetworkMode is the network a tool body's Pod may use.
// +kubebuilder:validation:Enum=None;Egress
type NetworkMode string

const (
	// NetworkNone: the Pod is labelled for the default-deny NetworkPolicy (no traffic in or out).
	NetworkNone NetworkMode = "None"
	// NetworkEgress: the Pod is labelled for the egress-only NetworkPolicy.
	NetworkEgress NetworkMode = "Egress"
)

// ScratchMode is the writable storage a tool body's Pod gets; its root filesystem is
// always read-only.
// +kubebuilder:validation:Enum=EmptyDir;None
type ScratchMode string

const (
	// ScratchEmptyDir mounts emptyDirs at /tmp and /var/run/toolgate (the arguments file).
	ScratchEmptyDir ScratchMode = "EmptyDir"
	// ScratchNone mounts no volume: nothing in the Pod is writable and the body reads its
	// arguments from stdin ($TOOLGATE_ARGS_FILE is empty). The kubelet then starts the
	// container without waiting for volume mounts (≈ 0.3 s sooner). Needs
	// body.runnerInImage: the runner init container copies into a volume.
	ScratchNone ScratchMode = "None"
)

// ToolSpec is what a Tool and a ClusterTool declare: the contract the model sees (name,
// description, schemas, hints), the body that runs, and the host settings around it.
// Host settings (timeout, body, sandbox) never reach the model.
// +kubebuilder:validation:XValidation:rule="!has(self.sandbox) || !has(self.sandbox.scratch) || self.sandbox.scratch != 'None' || (has(self.body.runnerInImage) && self.body.runnerInImage)",message="sandbox.scratch None requires body.runnerInImage (the runner init container needs a volume to copy into)"
// +kubebuilder:validation:XValidation:rule="!has(self.sandbox) || !has(self.sandbox.workspace) || self.sandbox.workspace != 'ReadWrite' || !has(self.concurrencySafe) || !self.concurrencySafe",message="a tool with sandbox.workspace ReadWrite is a barrier in its session: concurrencySafe must be false"
// +kubebuilder:validation:XValidation:rule="!has(self.warmPool) || self.warmPool.size == 0 || !has(self.sandbox) || !has(self.sandbox.egress)",message="a warm pool cannot serve a tool with sandbox.egress: each attempt's Pod carries its own egress proxy credential, which a Pod started before the call cannot have"
// +kubebuilder:validation:XValidation:rule="!has(self.warmPool) || self.warmPool.size == 0 || !(has(self.body.secretFiles) || (has(self.body.env) && self.body.env.exists(e, has(e.valueFrom))))",message="a warm pool cannot serve a tool with credentials (body.env[].valueFrom, body.secretFiles): a pool Pod would hold the Secret's value before any call, in namespaces whose Secrets nobody checked for it"
type ToolSpec struct {
	// name is the tool's name as the model sees it: an MCP tool name, 1 to 64 of [a-zA-Z0-9_-].
	// Default: metadata.name (applied by the controller; when metadata.name is not a valid
	// tool name, e.g. it contains a dot, name is required).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]{1,64}$`
	Name string `json:"name,omitempty"`

	// description tells the model what the tool does and when to use it. At most 4096 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Description string `json:"description,omitempty"`

	// parameters is the JSON Schema (draft 2020-12) the call's arguments object must satisfy.
	// Absent: any object. Checked by the controller (Registered=False, SchemaInvalid if it does
	// not compile).
	// +optional
	Parameters *runtime.RawExtension `json:"parameters,omitempty"`

	// output is the JSON Schema the result's content must satisfy. Absent: not checked.
	// +optional
	Output *runtime.RawExtension `json:"output,omitempty"`

	// concurrencySafe says calls of this tool may run in parallel with other calls of the
	// same session. Default false: each call is a barrier in its session.
	// +optional
	// +kubebuilder:default=false
	ConcurrencySafe bool `json:"concurrencySafe,omitempty"`

	// readOnly hints that the tool does not modify its environment; it surfaces as the MCP
	// readOnlyHint. A hint only: policies decide what runs. Default false.
	// +optional
	// +kubebuilder:default=false
	ReadOnly bool `json:"readOnly,omitempty"`

	// timeout bounds one attempt of the body, counted from the body's start and enforced by
	// the runner; a cold Job's and Pod's activeDeadlineSeconds is it plus the operator's
	// start allowance (--start-allowance). Default 60s; between 1s and 24h.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="timeout must be between 1s and 24h"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// retry says how many attempts a call gets and which failures start another one.
	// Default: one attempt.
	// +optional
	// +kubebuilder:default={}
	Retry RetryPolicy `json:"retry,omitempty"`

	// approvalWindow is how long a call of this tool waits for a ToolCallApproval after a
	// policy said Ask; then it is denied (ApprovalTimeout). A policy's own approvalWindow wins.
	// Default 15m; between 1s and 7 days (168h).
	// +optional
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('168h')",message="approvalWindow must be between 1s and 168h"
	ApprovalWindow *metav1.Duration `json:"approvalWindow,omitempty"`

	// body is the container that runs the tool. Required.
	// +required
	Body ToolBody `json:"body"`

	// sandbox sets the isolation of the body's Pod. Defaults: no network, 1 MiB of output.
	// +optional
	// +kubebuilder:default={}
	Sandbox Sandbox `json:"sandbox,omitempty"`

	// callTTLSecondsAfterFinished is the default ttlSecondsAfterFinished of this tool's
	// calls: how long a call is kept after it finished before the operator deletes it. A
	// call's own spec.ttlSecondsAfterFinished wins; unset here, the operator's --toolcall-ttl
	// applies. 0: calls are deleted as soon as they finish.
	// +optional
	// +kubebuilder:validation:Minimum=0
	CallTTLSecondsAfterFinished *int32 `json:"callTTLSecondsAfterFinished,omitempty"`

	// presentation holds CEL expressions that render a call and its result as one line for
	// people (CLI, events). Optional.
	// +optional
	Presentation *Presentation `json:"presentation,omitempty"`

	// warmPool keeps started Pods of this tool's own sandbox waiting for calls, each for
	// exactly one call, so that a call skips the Pod's start. Optional: absent or size 0, every
	// call starts a Pod of its own (the cold path). A Tool's pool is kept in its namespace;
	// a ClusterTool's in each of warmPool.namespaces (a call claims a Pod in its own
	// namespace; calls elsewhere run cold).
	// +optional
	WarmPool *WarmPool `json:"warmPool,omitempty"`
}

// WarmPool sizes a tool's pool of started, idle Pods (docs/warm-pools.md, "Warm pools").
type WarmPool struct {
	// size is how many idle Pods the operator keeps started. Each holds the tool's CPU and
	// memory requests while it waits. Between 0 and 50.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=50
	Size int32 `json:"size"`

	// maxIdle is how long an idle Pod waits for a call before it is replaced by a fresh one.
	// Default 10m; between 30s and 24h.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('24h')",message="maxIdle must be between 30s and 24h"
	MaxIdle *metav1.Duration `json:"maxIdle,omitempty"`

	// namespaces are where a ClusterTool's pool is kept: size Pods in each (a call's Pod
	// runs in the call's namespace, so a call claims a Pod of its own namespace; calls in
	// other namespaces run cold). Required for a ClusterTool with a size above 0; a Tool
	// takes none (its pool is in its own namespace). A listed namespace that does not exist
	// is skipped until it does (the ClusterTool's WarmPool condition names it). At most 32
	// namespace names.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespaces []string `json:"namespaces,omitempty"`
}

// RetryPolicy is how many attempts a call gets; each attempt is its own Job.
type RetryPolicy struct {
	// maxAttempts is the number of attempts, the first included. Default 1; 1 to 10.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	MaxAttempts int32 `json:"maxAttempts,omitempty"`

	// onReasons lists the failure reasons that start another attempt (while attempts remain):
	// DeadlineExceeded, OOMKilled, Evicted, NonZeroExit, ImageNeverStarted, JobDeleted.
	// Empty: no failure is retried. At most 8 items.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:Enum=DeadlineExceeded;OOMKilled;Evicted;NonZeroExit;ImageNeverStarted;JobDeleted
	OnReasons []string `json:"onReasons,omitempty"`
}

// ToolBody is the container that runs a tool, wrapped by the toolgate runner.
// +kubebuilder:validation:XValidation:rule="(has(self.env) ? size(self.env.filter(e, has(e.valueFrom))) : 0) + (has(self.secretFiles) ? size(self.secretFiles) : 0) <= 8",message="a tool body holds at most 8 credentials (body.env[].valueFrom and body.secretFiles together)"
// +kubebuilder:validation:XValidation:rule="!has(self.runnerPath) || (has(self.runnerInImage) && self.runnerInImage)",message="runnerPath requires runnerInImage"
type ToolBody struct {
	// image is the container image of the tool. Required; at most 512 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// command replaces the image's entrypoint (as in a Pod). At most 64 items.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Command []string `json:"command,omitempty"`

	// args replaces the image's cmd (as in a Pod). At most 64 items.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Args []string `json:"args,omitempty"`

	// env sets environment variables of the body's container. At most 64, unique by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Env []EnvVar `json:"env,omitempty"`

	// secretFiles mounts Secret keys read-only as files at /run/secrets/toolgate/<name>,
	// from the Secret of that name in the call's namespace (for a ClusterTool too), resolved
	// by the kubelet. The runner redacts their values from the body's output, as it does
	// body.env's secretKeyRef values. At most 8, unique by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	SecretFiles []SecretFile `json:"secretFiles,omitempty"`

	// workingDir is the body's working directory. Default: the image's.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	WorkingDir string `json:"workingDir,omitempty"`

	// resources are the body container's requests and limits. Absent ones are filled with the
	// operator's defaults: a tool Pod always has requests and limits.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// runnerInImage says the image already carries the toolgate runner (at runnerPath), so the
	// Pod needs no init container to copy it in (saves about a second). Default false.
	// +optional
	// +kubebuilder:default=false
	RunnerInImage bool `json:"runnerInImage,omitempty"`

	// runnerPath is the runner's absolute path inside the image; only with runnerInImage.
	// Default /toolgate/runner.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^/`
	RunnerPath string `json:"runnerPath,omitempty"`
}

// EnvVar is one environment variable of a tool body: a literal value (public to whoever
// can read the Tool) or a credential from a Secret (valueFrom), never both.
// +kubebuilder:validation:XValidation:rule="!(has(self.value) && has(self.valueFrom))",message="value and valueFrom are exclusive: a variable is a literal or a credential"
type EnvVar struct {
	// name of the variable. Required; 1 to 256 characters, no '='.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[^=]+$`
	Name string `json:"name"`

	// value of the variable. At most 32768 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Value string `json:"value,omitempty"`

	// valueFrom takes the value from a Secret key in the call's namespace (for a ClusterTool
	// too), resolved by the kubelet: the value is never copied into a ToolCall, its tool
	// snapshot, an event or a log, and the runner redacts it from the body's output. Whoever
	// creates or updates the Tool must be allowed to get that Secret (the
	// toolgate-credentials admission policy).
	// +optional
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource is where a credential's value comes from.
type EnvVarSource struct {
	// secretKeyRef names the Secret and key. Required.
	// +required
	SecretKeyRef CredentialKeySelector `json:"secretKeyRef"`
}

// CredentialKeySelector is one key of a Secret in the call's namespace (no default key:
// a credential names its key).
type CredentialKeySelector struct {
	// name of the Secret. Required.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key in the Secret's data. Required.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// SecretFile is one Secret key mounted read-only as a file of the body.
type SecretFile struct {
	// name of the file under /run/secrets/toolgate/. Required; 1 to 63 characters of
	// letters, digits, '-', '_' and '.', not starting with '.'.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-_.A-Za-z0-9]*$`
	Name string `json:"name"`

	// secretKeyRef names the Secret and key. Required.
	// +required
	SecretKeyRef CredentialKeySelector `json:"secretKeyRef"`
}

// Sandbox is the isolation of a tool body's Pod beyond the fixed hardening (non-root,
// read-only root filesystem, no capabilities, no service-account token).
// +kubebuilder:validation:XValidation:rule="!has(self.egress) || (has(self.network) && self.network == 'Egress')",message="sandbox.egress.allow requires sandbox.network: Egress (the Pod then reaches only the egress proxy, which lets through only the listed hosts)"
type Sandbox struct {
	// runtimeClassName runs the Pod under that RuntimeClass (gVisor, Kata). Default: the node's.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	RuntimeClassName *string `json:"runtimeClassName,omitempty"`

	// network is the network the Pod may use: None (labelled for the default-deny
	// NetworkPolicy) or Egress. Default None.
	// +optional
	// +kubebuilder:default=None
	Network NetworkMode `json:"network,omitempty"`

	// egress lets the body reach the named hosts, and only those, through toolgate's egress
	// proxy: requires network Egress, and the Pod then reaches only the proxy (see Egress).
	// Absent: network Egress reaches anything outside the cluster's ranges.
	// +optional
	Egress *Egress `json:"egress,omitempty"`

	// maxOutputBytes bounds what the runner reads from the body's stdout; more is an
	// OutputTooLarge failure, never a silent cut. Default and maximum 1048576 (1 MiB): the
	// result is stored in the ToolCall's status, and etcd bounds an object at 1.5 MiB.
	// +optional
	// +kubebuilder:default=1048576
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	MaxOutputBytes int64 `json:"maxOutputBytes,omitempty"`

	// scratch is the Pod's writable storage: EmptyDir (default: /tmp and the arguments
	// file on emptyDirs) or None (no volume at all, the body reads its arguments from
	// stdin; the Pod starts ≈ 0.3 s sooner because the kubelet has no volume to wait for).
	// None requires body.runnerInImage.
	// +optional
	// +kubebuilder:default=EmptyDir
	Scratch ScratchMode `json:"scratch,omitempty"`

	// scratchSizeLimit is the sizeLimit of each of the Pod's emptyDirs (/tmp and the
	// arguments volume): the kubelet evicts a Pod whose emptyDir grows past it, and the call
	// ends isError (Evicted). Default: the operator's --default-scratch-size-limit (256Mi).
	// The Pod as a whole (emptyDirs and logs) is bounded by the body container's
	// ephemeral-storage limit (body.resources; default --default-ephemeral-storage-limit).
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="scratchSizeLimit must be positive"
	ScratchSizeLimit *resource.Quantity `json:"scratchSizeLimit,omitempty"`

	// workspace mounts the call's session workspace (declared by its scope, see
	// ToolScope spec.workspace) at /workspace: ReadWrite (the call is a barrier in its
	// session; concurrencySafe must be false) or ReadOnly (mounted read-only; such calls
	// run in parallel between the session's barriers, whatever concurrencySafe says).
	// Absent: no workspace. A call of such a tool needs spec.session (else it is refused,
	// WorkspaceNeedsSession), always runs cold (a warm pool Pod cannot mount a session's
	// volume after it started) and waits, within its deadline, for the claim to bind.
	// +optional
	Workspace WorkspaceAccess `json:"workspace,omitempty"`
}

// Presentation renders calls and results for people. Each field is a CEL expression over
// {tool, arguments, call} (and result for result) that yields a string.
type Presentation struct {
	// call renders a call, e.g. "'grep ' + arguments.pattern". At most 1024 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Call string `json:"call,omitempty"`

	// result renders a result. At most 1024 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Result string `json:"result,omitempty"`
}

// ToolStatus is the registration state of a Tool or ClusterTool, written by the controller.
type ToolStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Registered (reasons Registered, DuplicateName, SchemaInvalid,
	// PresentationInvalid, UnknownScope); for a ClusterTool with a warm pool, WarmPool
	// (reasons PoolKept, NamespaceMissing).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// specDigest is "sha256:<hex>" of the spec as the controller registered it; a ToolCall
	// records it as the snapshot it was admitted with.
	// +optional
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	SpecDigest string `json:"specDigest,omitempty"`

	// resolvedName is the name the model sees: spec.name, or metadata.name when that is empty.
	// +optional
	ResolvedName string `json:"resolvedName,omitempty"`
}
