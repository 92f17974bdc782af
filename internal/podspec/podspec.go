// Package podspec builds a tool attempt's Job and Pod spec from a resolved tool snapshot and
// options; pure: no client, no cluster, no clock. The executors (controllers/exec_*.go) create
// what it builds; the warm pool's Pods are the same spec without the call (warm.go).
package podspec

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

const (
	// JobFinalizer holds a tool Job until the operator has seen its end: a Job deleted while
	// its call runs is then observed (JobDeleted), never mistaken for one not yet created.
	JobFinalizer = "toolgate.dev/outcome"

	maxJobName = 63
)

// Options are the operator-wide settings the Job builder needs.
type Options struct {
	// RunnerImage holds the runner at /toolgate/runner (the operator's own image).
	RunnerImage string
	// DefaultResources fill in whatever requests and limits a Tool leaves out; its
	// ephemeral-storage limit bounds what a tool Pod writes to the node's disk (emptyDirs,
	// logs, writable layer).
	DefaultResources corev1.ResourceRequirements
	// DefaultRuntimeClassName is the RuntimeClass of tool Pods whose Tool sets no
	// sandbox.runtimeClassName (--default-runtime-class); "" leaves the node's default.
	DefaultRuntimeClassName string
	// ScratchSizeLimit is the sizeLimit of each emptyDir of a tool Pod whose Tool sets no
	// sandbox.scratchSizeLimit.
	ScratchSizeLimit resource.Quantity
	// RunAsUser is the non-root uid (and gid) tool Pods run as.
	RunAsUser int64
	// TerminationGracePeriodSeconds bounds how long a body gets after SIGTERM.
	TerminationGracePeriodSeconds int64
	// StartAllowance (--start-allowance) is added to a cold Pod's and Job's
	// activeDeadlineSeconds for sandbox start-up (scheduling, image, containers): the tool's
	// own timeout counts from the body's start, enforced by the runner
	// (podcontract.EnvDeadlineMs), so start-up under load never spends it. Whole seconds,
	// rounded up.
	StartAllowance time.Duration
	// ToolOTLPEndpoint is the OTLP/HTTP base URL every tool body gets as
	// OTEL_EXPORTER_OTLP_ENDPOINT (--tracing-tool-endpoint, only with tracing on); empty:
	// none. Whether a body reaches it is its NetworkPolicies' business (toolOTLPEnv).
	ToolOTLPEndpoint string
}

// DefaultOptions are used when the manager is started without overrides.
func DefaultOptions() Options {
	return Options{
		RunnerImage: "toolgate.local/manager:dev",
		DefaultResources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:              resource.MustParse("50m"),
				corev1.ResourceMemory:           resource.MustParse("32Mi"),
				corev1.ResourceEphemeralStorage: resource.MustParse("64Mi"),
			},
			Limits: corev1.ResourceList{
				corev1.ResourceCPU:              resource.MustParse("1"),
				corev1.ResourceMemory:           resource.MustParse("256Mi"),
				corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
			},
		},
		ScratchSizeLimit:              resource.MustParse("256Mi"),
		RunAsUser:                     65532,
		TerminationGracePeriodSeconds: 5,
		StartAllowance:                DefaultStartAllowance,
	}
}

// DefaultStartAllowance is StartAllowance's default: above the slowest start-up seen on
// the local node under a 200-call burst (13 s at load 16; docs/bursts.md).
const DefaultStartAllowance = 30 * time.Second

// Input is everything one attempt's Job is built from.
type Input struct {
	Call *toolgatev1alpha1.ToolCall
	// Tool is the snapshot the call was admitted with.
	Tool *toolgatev1alpha1.ToolSpec
	// Arguments are the frozen canonical bytes and Digest their "sha256:<hex>".
	Arguments []byte
	Digest    string
	Attempt   int32
	// Traceparent is the attempt's execution span context (internal/tracing), handed to
	// the body as TRACEPARENT; empty when the operator does not trace.
	Traceparent string
	// Workspace is the session workspace the Pod mounts at /workspace; nil: none.
	Workspace *WorkspaceMount
	// EgressProxyURL is the egress proxy with the attempt's grant, handed to a body whose
	// Tool names sandbox.egress as HTTPS_PROXY and HTTP_PROXY (controllers/egress.go); empty: none.
	EgressProxyURL string
	// EgressProxyAlias maps the proxy URL's host name to its address (the Pod has no DNS).
	EgressProxyAlias *corev1.HostAlias
	// EgressCA is the egress CA (PEM) the body must trust, for a Tool whose egress
	// credentials the proxy injects (controllers/egress_inject.go); empty: none.
	EgressCA string
	// Admission, when set, creates the Job suspended, to wait for Kueue or the operator's
	// start bound (admission.go); nil: the Job starts at once.
	Admission *Admission
}

// JobName is the deterministic name of a call's Job for one attempt: the same call and
// attempt always give the same name, so a create after a restart finds the Job that exists.
func JobName(callName string, attempt int32) string {
	suffix := "-" + strconv.Itoa(int(attempt))
	if len(callName)+len(suffix) <= maxJobName {
		return callName + suffix
	}
	keep := maxJobName - len(suffix) - 8 - 1
	// A cut name may end in '.' or '-'; "x.-hash" would not be a DNS subdomain.
	return strings.TrimRight(callName[:keep], ".-") + "-" + shortHash(callName, 8) + suffix
}

func shortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

// CallLabelValue is the value of podcontract.LabelCall for a call: its name when that fits a label.
func CallLabelValue(callName string) string { return toolgatev1alpha1.CallLabelValue(callName) }

// ToolLabelValue is the value of podcontract.LabelTool for a tool name. Tool names ([a-zA-Z0-9_-], up to
// 64) are not all label values ("_probe", 64 characters): those get a readable prefix and a
// hash joined by '.', which no tool name contains, so a hashed value never equals a real
// name. podcontract.AnnotationTool carries the exact name.
func ToolLabelValue(tool string) string {
	if len(validation.IsValidLabelValue(tool)) == 0 {
		return tool
	}
	const hashLen = 16
	prefix := strings.Trim(tool, "_-.")
	if len(prefix) > validation.LabelValueMaxLength-hashLen-1 {
		prefix = strings.TrimRight(prefix[:validation.LabelValueMaxLength-hashLen-1], "_-.")
	}
	if prefix == "" {
		prefix = "tool"
	}
	return prefix + "." + shortHash(tool, hashLen)
}

// BuildJob returns the Job for one attempt of a call. It is a pure function of its input:
// the owner reference is set by the caller (it needs the scheme).
func BuildJob(in Input, opts Options) *batchv1.Job {
	deadline := TimeoutSeconds(in.Tool) + int64(opts.Allowance()/time.Second)
	labels := map[string]string{
		podcontract.LabelManagedBy: podcontract.ManagedByValue,
		podcontract.LabelCall:      CallLabelValue(in.Call.Name),
		podcontract.LabelAttempt:   strconv.Itoa(int(in.Attempt)),
		podcontract.LabelTool:      ToolLabelValue(in.Call.Spec.Tool),
		podcontract.LabelNetwork:   sandboxNetworkLabel(in.Tool.Sandbox),
	}
	annotations := map[string]string{podcontract.AnnotationArgDigest: in.Digest, podcontract.AnnotationCallName: in.Call.Name, podcontract.AnnotationTool: in.Call.Spec.Tool}
	return withAdmission(&batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        JobName(in.Call.Name, in.Attempt),
			Namespace:   in.Call.Namespace,
			Labels:      labels,
			Annotations: annotations,
			Finalizers:  []string{JobFinalizer},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(deadline),
			// No ttlSecondsAfterFinished: the TTL controller deletes with foreground
			// propagation, Pod (the result) first; the operator deletes a Job itself once it
			// recorded the attempt's outcome (CallOptions.JobRetention).
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec:       WithWorkspace(buildPodSpec(in, opts, deadline), in.Workspace),
			},
		},
	}, in.Admission)
}

func buildPodSpec(in Input, opts Options, deadline int64) corev1.PodSpec {
	body := in.Tool.Body
	runner := podcontract.CopiedRunner
	var initContainers []corev1.Container
	if body.RunnerInImage {
		runner = body.RunnerPath
		if runner == "" {
			runner = podcontract.ImageRunner
		}
	} else {
		initContainers = []corev1.Container{runnerInitContainer(opts)}
	}
	command := append([]string{runner, podcontract.BodyFlag, "--"}, body.Command...)
	command = append(command, body.Args...)
	tool := corev1.Container{
		Name:                     podcontract.ToolContainerName,
		Image:                    body.Image,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		Command:                  command,
		WorkingDir:               body.WorkingDir,
		Env:                      slices.Concat(bodyEnv(body), toolOTLPEnv(body.Env, opts), egressProxyEnv(in.EgressProxyURL), egressCAEnv(in.EgressCA)),
		Resources:                withDefaults(body.Resources, opts.DefaultResources),
		SecurityContext:          containerSecurityContext(),
		VolumeMounts:             append(volumeMounts(in.Tool.Sandbox.Scratch), linkMounts(in.Tool.Sandbox, opts)...),
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
	signer := signerContainer(opts, in.Tool.Sandbox, MaxOutput(in.Tool), signerEnv(in))
	return withSecretFiles(corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		ActiveDeadlineSeconds:         ptr.To(deadline),
		TerminationGracePeriodSeconds: ptr.To(opts.TerminationGracePeriodSeconds),
		AutomountServiceAccountToken:  ptr.To(false),
		EnableServiceLinks:            ptr.To(false),
		RuntimeClassName:              opts.runtimeClassOf(in.Tool.Sandbox),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To(opts.RunAsUser),
			RunAsGroup:     ptr.To(opts.RunAsUser),
			FSGroup:        ptr.To(opts.RunAsUser),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		InitContainers: initContainers,
		// The signer first: the kubelet starts containers in order, so it listens by the time
		// the body side looks for it.
		Containers:  []corev1.Container{signer, tool},
		HostAliases: hostAliases(in.EgressProxyAlias),
		Volumes:     append(volumes(in.Tool.Sandbox, opts.ScratchSizeLimit), linkVolumes(in.Tool.Sandbox, opts)...),
	}, body)
}

// Allowance is StartAllowance as the Job's activeDeadlineSeconds adds it: whole seconds,
// rounded up (0 when negative).
func (o Options) Allowance() time.Duration {
	return time.Duration(max(0, math.Ceil(o.StartAllowance.Seconds()))) * time.Second
}

// TimeoutSeconds is a tool's timeout in whole seconds, rounded up (60 when it sets none):
// the deadline the runner enforces from the body's start (the Pod's and the Job's
// activeDeadlineSeconds add the start allowance).
func TimeoutSeconds(spec *toolgatev1alpha1.ToolSpec) int64 {
	if spec.Timeout == nil || spec.Timeout.Duration <= 0 {
		return 60
	}
	return int64(math.Ceil(spec.Timeout.Seconds()))
}

// MaxOutput is a tool's output bound in bytes (1 MiB when it sets none).
func MaxOutput(spec *toolgatev1alpha1.ToolSpec) int64 {
	if spec.Sandbox.MaxOutputBytes <= 0 {
		return 1 << 20
	}
	return spec.Sandbox.MaxOutputBytes
}
