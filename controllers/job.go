package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"

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

// JobOptions are the operator-wide settings the Job builder needs.
type JobOptions struct {
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
	// ToolOTLPEndpoint is the OTLP/HTTP base URL every tool body gets as
	// OTEL_EXPORTER_OTLP_ENDPOINT (--tracing-tool-endpoint, only with tracing on); empty:
	// none. Whether a body reaches it is its NetworkPolicies' business (toolOTLPEnv).
	ToolOTLPEndpoint string
}

// DefaultJobOptions are used when the manager is started without overrides.
func DefaultJobOptions() JobOptions {
	return JobOptions{
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
	}
}

// JobInput is everything one attempt's Job is built from.
type JobInput struct {
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
	// Tool names sandbox.egress as HTTPS_PROXY and HTTP_PROXY (egress.go); empty: none.
	EgressProxyURL string
	// EgressProxyAlias maps the proxy URL's host name to its address (the Pod has no DNS).
	EgressProxyAlias *corev1.HostAlias
	// EgressCA is the egress CA (PEM) the body must trust, for a Tool whose egress
	// credentials the proxy injects (egress_inject.go); empty: none.
	EgressCA string
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
func BuildJob(in JobInput, opts JobOptions) *batchv1.Job {
	deadline := timeoutSeconds(in.Tool)
	labels := map[string]string{
		podcontract.LabelManagedBy: podcontract.ManagedByValue,
		podcontract.LabelCall:      CallLabelValue(in.Call.Name),
		podcontract.LabelAttempt:   strconv.Itoa(int(in.Attempt)),
		podcontract.LabelTool:      ToolLabelValue(in.Call.Spec.Tool),
		podcontract.LabelNetwork:   sandboxNetworkLabel(in.Tool.Sandbox),
	}
	annotations := map[string]string{podcontract.AnnotationArgDigest: in.Digest, podcontract.AnnotationCallName: in.Call.Name, podcontract.AnnotationTool: in.Call.Spec.Tool}
	return &batchv1.Job{
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
				Spec:       withWorkspace(buildPodSpec(in, opts, deadline), in.Workspace),
			},
		},
	}
}

func buildPodSpec(in JobInput, opts JobOptions, deadline int64) corev1.PodSpec {
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
	signer := signerContainer(opts, in.Tool.Sandbox, maxOutput(in.Tool), signerEnv(in))
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

// RuntimeClassOf is the RuntimeClass a tool's Pods run under: the Tool's, else the
// operator's default; "" for the node's default runtime.
func (o JobOptions) RuntimeClassOf(sandbox toolgatev1alpha1.Sandbox) string {
	if sandbox.RuntimeClassName != nil && *sandbox.RuntimeClassName != "" {
		return *sandbox.RuntimeClassName
	}
	return o.DefaultRuntimeClassName
}

func (o JobOptions) runtimeClassOf(sandbox toolgatev1alpha1.Sandbox) *string {
	if rc := o.RuntimeClassOf(sandbox); rc != "" {
		return &rc
	}
	return nil
}

// volumes are the Pod's only writable storage: none with scratch None, so that the
// kubelet starts the container without waiting for a volume mount. Each emptyDir has a
// sizeLimit (the Tool's, else the operator's): past it the kubelet evicts the Pod.
func volumes(sandbox toolgatev1alpha1.Sandbox, defaultLimit resource.Quantity) []corev1.Volume {
	if sandbox.Scratch == toolgatev1alpha1.ScratchNone {
		return nil
	}
	limit := defaultLimit
	if sandbox.ScratchSizeLimit != nil && sandbox.ScratchSizeLimit.Sign() > 0 {
		limit = *sandbox.ScratchSizeLimit
	}
	emptyDir := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(limit.DeepCopy())}}}
	}
	return []corev1.Volume{emptyDir(podcontract.RunVolume), emptyDir(podcontract.TmpVolume)}
}

// linkVolumes is the link volume, for the Pods that need it: the signer and the body side
// meet at an abstract Unix socket in the Pod's network namespace, which needs no volume
// (and a Pod without volumes starts sooner: the kubelet does not wait for a mount), but
// runtimes differ in whether containers share that namespace (on the local cluster each
// gVisor container is a sandbox of its own): a Pod under a RuntimeClass gets a socket file
// in the link volume too, and a Pod with scratch volumes has it at no cost.
func linkVolumes(sandbox toolgatev1alpha1.Sandbox, opts JobOptions) []corev1.Volume {
	if !needsLinkVolume(sandbox, opts) {
		return nil
	}
	return []corev1.Volume{linkVolume()}
}

func linkMounts(sandbox toolgatev1alpha1.Sandbox, opts JobOptions) []corev1.VolumeMount {
	if !needsLinkVolume(sandbox, opts) {
		return nil
	}
	return []corev1.VolumeMount{linkMount()}
}

// needsLinkVolume: also where the body side writes the egress CA bundle (EgressCABundle).
func needsLinkVolume(sandbox toolgatev1alpha1.Sandbox, opts JobOptions) bool {
	return sandbox.Scratch != toolgatev1alpha1.ScratchNone || opts.RuntimeClassOf(sandbox) != "" || hasEgressCredential(sandbox)
}

// linkVolume holds the socket the body side reaches the signer by, and nothing else.
func linkVolume() corev1.Volume {
	return corev1.Volume{Name: podcontract.LinkVolume, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Mi"))}}}
}

func linkMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: podcontract.LinkVolume, MountPath: podcontract.LinkMountPath}
}

func runnerInitContainer(opts JobOptions) corev1.Container {
	return corev1.Container{
		Name:            podcontract.RunnerInitContainerName,
		Image:           opts.RunnerImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{podcontract.ImageRunner, podcontract.CopySelfFlag, podcontract.CopiedRunner},
		Resources:       opts.DefaultResources,
		SecurityContext: containerSecurityContext(),
		VolumeMounts:    volumeMounts(toolgatev1alpha1.ScratchEmptyDir),
	}
}

// bodyEnv is the body's container's environment: the Tool's own (literals keep the
// kubelet's $(VAR) expansion, as the operator wrote them in the Pod API's syntax; Secret
// keys the kubelet resolves). No key, no arguments: the body side gets those from the
// signer.
func bodyEnv(body toolgatev1alpha1.ToolBody) []corev1.EnvVar {
	env := make([]corev1.EnvVar, 0, len(body.Env))
	for _, e := range body.Env {
		env = append(env, bodyEnvVar(e))
	}
	return env
}

// signerEnv is the signer container's environment: the frozen arguments and their digest,
// where the body side writes them, the output bound, the attempt's frame key (by reference
// to its Secret) and the credentials' values to redact. The kubelet expands $(NAME)
// references in env values and turns $$ into $, so every value toolgate sets is escaped
// (literalEnv): the runner reads exactly the frozen bytes, whatever they contain.
func signerEnv(in JobInput) []corev1.EnvVar {
	env := append(credentialEnv(in.Tool.Body), egressRedactEnv(in.Tool.Sandbox)...)
	if in.Traceparent != "" {
		env = append(env, literalEnv(podcontract.EnvTraceparent, in.Traceparent))
	}
	return append(env,
		literalEnv(podcontract.EnvArgs, string(in.Arguments)),
		literalEnv(podcontract.EnvArgsDigest, in.Digest),
		literalEnv(podcontract.EnvArgsFile, argsFileFor(in.Tool.Sandbox.Scratch)),
		literalEnv(podcontract.EnvMaxOutput, strconv.FormatInt(maxOutput(in.Tool), 10)),
		attemptKeyEnv(JobName(in.Call.Name, in.Attempt)),
	)
}

// signerContainer is the container that holds the attempt's key and signs the frame: the
// runner from the operator's image, which runs nothing itself. The body cannot reach it
// (another container: its own PID and mount namespaces, whatever the runtime); it talks to
// the body side over a Unix socket in the link volume only. Its resources are its own, small and fixed
// but for memory, which grows with the output it may keep (and redact, and encode).
func signerContainer(opts JobOptions, sandbox toolgatev1alpha1.Sandbox, maxOut int64, env []corev1.EnvVar) corev1.Container {
	return corev1.Container{
		Name:                     podcontract.SignerContainerName,
		Image:                    opts.RunnerImage,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		Command:                  []string{podcontract.ImageRunner, podcontract.SignFlag},
		Env:                      env,
		Resources:                signerResources(opts, maxOut),
		SecurityContext:          containerSecurityContext(),
		VolumeMounts:             linkMounts(sandbox, opts),
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
}

// signerResources: 10m CPU and 16 MiB requested; at most half a CPU, and 32 MiB plus eight
// times the output bound (the kept output, its redaction, the frame's base64 and gzip); the
// ephemeral-storage limit of a tool container, for its log (the body's stderr, redacted).
func signerResources(opts JobOptions, maxOut int64) corev1.ResourceRequirements {
	storage := resource.MustParse("64Mi")
	if q, ok := opts.DefaultResources.Limits[corev1.ResourceEphemeralStorage]; ok {
		storage = q
	}
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("10m"),
			corev1.ResourceMemory:           resource.MustParse("16Mi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("1Mi"),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("500m"),
			corev1.ResourceMemory:           *resource.NewQuantity(32<<20+8*maxOut, resource.BinarySI),
			corev1.ResourceEphemeralStorage: storage,
		},
	}
}

// toolOTLPEnv points a body's OpenTelemetry SDK at the collector the operator names
// (opts.ToolOTLPEndpoint): OTEL_EXPORTER_OTLP_ENDPOINT, the base URL the SDK appends
// /v1/traces to, and OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, since the endpoint speaks
// OTLP/HTTP and some SDKs default to gRPC. A name the Tool's body.env already sets is
// the Tool's. Nothing without an endpoint. The same for cold and warm Pods (the warm
// template digest covers it: a changed endpoint replaces idle Pods).
func toolOTLPEnv(bodyEnv []toolgatev1alpha1.EnvVar, opts JobOptions) []corev1.EnvVar {
	if opts.ToolOTLPEndpoint == "" {
		return nil
	}
	var env []corev1.EnvVar
	for _, e := range []corev1.EnvVar{literalEnv(podcontract.EnvOTLPEndpoint, opts.ToolOTLPEndpoint), literalEnv(podcontract.EnvOTLPProtocol, podcontract.OTLPProtocolHTTP)} {
		if !slices.ContainsFunc(bodyEnv, func(b toolgatev1alpha1.EnvVar) bool { return b.Name == e.Name }) {
			env = append(env, e)
		}
	}
	return env
}

// literalEnv is an env var whose value reaches the container unexpanded: the kubelet turns
// each $$ back into $, and no $( survives to start a reference.
func literalEnv(name, value string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, Value: strings.ReplaceAll(value, "$", "$$")}
}

// argsFileFor is where the runner writes the arguments; "-" (scratch None) means no file.
func argsFileFor(scratch toolgatev1alpha1.ScratchMode) string {
	if scratch == toolgatev1alpha1.ScratchNone {
		return podcontract.NoArgsFile
	}
	return podcontract.ArgsFile
}

func containerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Privileged:               ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func volumeMounts(scratch toolgatev1alpha1.ScratchMode) []corev1.VolumeMount {
	if scratch == toolgatev1alpha1.ScratchNone {
		return nil
	}
	return []corev1.VolumeMount{
		{Name: podcontract.RunVolume, MountPath: podcontract.RunMountPath},
		{Name: podcontract.TmpVolume, MountPath: "/tmp"},
	}
}

// withDefaults fills every request and limit the tool left out, so that a tool Pod always
// has both; a request the tool set above the default limit raises that limit to match.
func withDefaults(set, defaults corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for name, q := range defaults.Requests {
		out.Requests[name] = q
	}
	for name, q := range defaults.Limits {
		out.Limits[name] = q
	}
	for name, q := range set.Limits {
		out.Limits[name] = q
	}
	for name, q := range set.Requests {
		out.Requests[name] = q
		if limit, ok := out.Limits[name]; ok && q.Cmp(limit) > 0 {
			out.Limits[name] = q
		}
	}
	for name, req := range out.Requests {
		if limit, ok := out.Limits[name]; ok && req.Cmp(limit) > 0 {
			out.Requests[name] = limit
		}
	}
	return out
}

func timeoutSeconds(spec *toolgatev1alpha1.ToolSpec) int64 {
	if spec.Timeout == nil || spec.Timeout.Duration <= 0 {
		return 60
	}
	return int64(math.Ceil(spec.Timeout.Seconds()))
}

func maxOutput(spec *toolgatev1alpha1.ToolSpec) int64 {
	if spec.Sandbox.MaxOutputBytes <= 0 {
		return 1 << 20
	}
	return spec.Sandbox.MaxOutputBytes
}

func networkLabel(mode toolgatev1alpha1.NetworkMode) string {
	if mode == toolgatev1alpha1.NetworkEgress {
		return "egress"
	}
	return "none"
}

// toolContainerOf and signerOf are the Pod spec's body and signer containers.
func toolContainerOf(ps *corev1.PodSpec) *corev1.Container {
	return containerOf(ps, podcontract.ToolContainerName)
}

func signerOf(ps *corev1.PodSpec) *corev1.Container {
	return containerOf(ps, podcontract.SignerContainerName)
}

func containerOf(ps *corev1.PodSpec, name string) *corev1.Container {
	for i := range ps.Containers {
		if ps.Containers[i].Name == name {
			return &ps.Containers[i]
		}
	}
	return nil
}

// withWorkspace adds the session's claim to a tool Pod's spec, mounted in the tool
// container only (the runner init container has no business there), and the values its
// files may hold to the signer's environment only (the body is given nothing new).
func withWorkspace(spec corev1.PodSpec, m *WorkspaceMount) corev1.PodSpec {
	if m == nil {
		return spec
	}
	spec.Volumes = append(spec.Volumes, workspaceVolume(m))
	tool, signer := toolContainerOf(&spec), signerOf(&spec)
	tool.VolumeMounts = append(tool.VolumeMounts, workspaceVolumeMount(m))
	signer.Env = append(signer.Env, redactEnv(m.Credentials)...)
	return spec
}
