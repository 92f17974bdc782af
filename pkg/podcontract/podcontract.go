// Package podcontract is the one home of everything the operator, the in-Pod runner, the
// executors and the test kit share about a tool Pod: environment variable names, labels and
// annotations, container, volume and path names. Nothing else in this module spells these
// names (TestNamesHaveOneHome fails when one is written as a literal elsewhere), so a name
// cannot drift between the process that writes it and the one that reads it.
//
// The package has no dependencies: the API package, the runner and the tools import it.
package podcontract

// Environment variables the operator sets on the tool container and the runner reads.
// Values the operator sets are escaped for the kubelet's $(VAR) expansion: the runner reads
// them exactly as written.
const (
	// EnvArgs holds the frozen canonical arguments (cold attempts).
	EnvArgs = "TOOLGATE_ARGS"
	// EnvArgsDigest is EnvArgs' "sha256:<hex>" digest; the runner checks it.
	EnvArgsDigest = "TOOLGATE_ARGS_DIGEST"
	// EnvArgsFile is where the runner writes the arguments for the body ("-": no file);
	// the body reads the same variable to find them.
	EnvArgsFile = "TOOLGATE_ARGS_FILE"
	// EnvMaxOutput bounds the stdout the runner keeps, in bytes.
	EnvMaxOutput = "TOOLGATE_MAX_OUTPUT"
	// EnvStderrTail bounds the stderr tail the runner keeps, in bytes.
	EnvStderrTail = "TOOLGATE_STDERR_TAIL"
	// EnvTerminationPath is where the runner writes its frame (the termination message).
	EnvTerminationPath = "TOOLGATE_TERMINATION_PATH"
	// EnvResultMarker overrides the marker of a frame block carried in the Pod log.
	EnvResultMarker = "TOOLGATE_RESULT_MARKER"
	// EnvAttemptKey is the attempt's frame key (frame.AttemptKey, base64url), in the signer
	// container only, from the attempt's key Secret (AttemptKeySecret) by secretKeyRef: never
	// a literal in a Pod spec, never in the body's container. The signer signs its frame with
	// it; it verifies for this call's attempt and no other.
	EnvAttemptKey = "TOOLGATE_ATTEMPT_KEY"
	// EnvHandoverKeys, on a warm pool Pod's signer, lists (comma-separated, base64url) the
	// public keys a Handover must be signed with (frame.HandoverPublicKey of the namespace's
	// masters): the Pod holds no secret before its call; the Handover brings its attempt key.
	EnvHandoverKeys = "TOOLGATE_HANDOVER_KEYS"
	// EnvPodUID is the warm pool Pod's own metadata.uid (downward API): a Handover is
	// signed for one Pod, so it cannot be replayed to another.
	EnvPodUID = "TOOLGATE_POD_UID"
	// EnvSignerSocket and EnvSignerAbstract override SignerSocket and SignerAbstractSocket
	// (tests).
	EnvSignerSocket   = "TOOLGATE_SIGNER_SOCKET"
	EnvSignerAbstract = "TOOLGATE_SIGNER_ABSTRACT"
	// EnvWarm ("1") starts the runner in warm mode: it waits for one Handover on stdin.
	EnvWarm = "TOOLGATE_WARM"
	// EnvTraceparent is the body's W3C traceparent of the attempt's execution span
	// (docs/observability.md, "Tracing"): set by the operator when it traces, handed to the body
	// unchanged by the runner (a warm runner sets it from the handover's traceparent), so
	// that the tool can continue the trace.
	EnvTraceparent = "TRACEPARENT"
	// EnvOTLPEndpoint and EnvOTLPProtocol are the standard OpenTelemetry exporter variables
	// a body's SDK reads (the operator's --tracing-tool-endpoint).
	EnvOTLPEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPProtocol = "OTEL_EXPORTER_OTLP_PROTOCOL"
	// OTLPProtocolHTTP is the only protocol the tool endpoint speaks.
	OTLPProtocolHTTP = "http/protobuf"
	// EnvHTTPSProxy and EnvHTTPProxy point the HTTP clients of a body whose Tool names
	// sandbox.egress.allow at the egress proxy, with the attempt's signed grant as the
	// URL's password; the lowercase forms are set too (curl reads only http_proxy).
	EnvHTTPSProxy      = "HTTPS_PROXY"
	EnvHTTPProxy       = "HTTP_PROXY"
	EnvHTTPSProxyLower = "https_proxy"
	EnvHTTPProxyLower  = "http_proxy"
	// EnvEgressCA, in the body's container of a Tool with an egress credential (and never
	// passed on to the tool), is the toolgate egress CA (PEM) whose certificates the proxy
	// presents for the hosts it injects into: the body side writes EgressCABundle (the
	// image's roots and this CA) before it starts the tool, and points EgressTrustEnv at it.
	EnvEgressCA = "TOOLGATE_EGRESS_CA"
	// EgressCABundle is that bundle, in the link volume.
	EgressCABundle = LinkMountPath + "/egress-ca-bundle.pem"
	// EnvRedactEgressPrefix + i, in the signer container (never the body's) of a Tool with
	// egress credentials, holds the i-th credential's Secret value by a required
	// secretKeyRef: a body the upstream echoes the token back to cannot print it. i runs
	// from 0 to MaxEgressCredentials-1.
	EnvRedactEgressPrefix = "TOOLGATE_REDACT_EGRESS_"
	// NoArgsFile as EnvArgsFile means: write no arguments file (no writable volume).
	NoArgsFile = "-"
	// WarmOn is EnvWarm's value in a warm pool Pod.
	WarmOn = "1"
	// EnvDeadlineMs, in a cold or warm Pod's signer container, is the tool's timeout in
	// milliseconds: the body side stops the tool's process group that long after it started
	// it, and the signer's own clock checks it. The Pod's activeDeadlineSeconds is that
	// timeout plus the operator's start allowance (sandbox start-up never spends the tool's
	// time; docs/bursts.md).
	EnvDeadlineMs = "TOOLGATE_DEADLINE_MS"
	// EnvSession ("1", SessionOn) starts the runner in session mode (both containers of a
	// session Pod): the signer serves the operator's calls one after another over mutual
	// TLS, the body side runs each and resets the container between them.
	EnvSession = "TOOLGATE_SESSION"
	SessionOn  = "1"
	// EnvSessionTLSDir is the session signer's directory of SessionTLSCert, SessionTLSKey
	// and SessionClientCA (a Secret volume mounted into the signer container only).
	EnvSessionTLSDir = "TOOLGATE_SESSION_TLS_DIR"
	SessionTLSDir    = "/var/run/toolgate-session-tls"
	SessionTLSCert   = "tls.crt"
	SessionTLSKey    = "tls.key"
	SessionClientCA  = "client-ca.crt"
	// EnvSessionAddr overrides the session signer's listen address (default ":" SessionPort;
	// tests).
	EnvSessionAddr = "TOOLGATE_SESSION_ADDR"
	SessionPort    = 8443
	// EnvSessionRelay (SessionRelay, a socket in the link volume), set on both containers of
	// a session Pod under a RuntimeClass: the signer listens for the operator there instead
	// of on TCP, and the body side listens on TCP (EnvSessionAddr) and relays each
	// connection to it, bytes only (the mutual TLS ends at the signer). Under a runtime whose
	// sandbox holds the Pod's address (gVisor) only a listener inside it is reachable.
	EnvSessionRelay = "TOOLGATE_SESSION_RELAY"
	// EnvSessionWipe overrides, in the body's container, the comma-separated directories
	// whose contents the body side removes after each session call (default
	// "/tmp,/dev/shm,$HOME");
	// EnvWorkspace the workspace's mount path (default WorkspaceMountPath), which is never
	// wiped.
	EnvSessionWipe = "TOOLGATE_SESSION_WIPE"
	EnvWorkspace   = "TOOLGATE_WORKSPACE"
)

// Labels and annotations on the Jobs and Pods toolgate creates. The API package re-exports
// the ones clients read (api/v1alpha1/well_known.go).
const (
	// LabelManagedBy is app.kubernetes.io/managed-by, ManagedByValue on toolgate's Jobs and Pods.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "toolgate"
	// LabelCall on a Job or Pod is the call's name, cut and hashed when it is no label value.
	LabelCall = "toolgate.dev/call"
	// LabelAttempt on a Job or Pod is the attempt number.
	LabelAttempt = "toolgate.dev/attempt"
	// LabelTestHold on a ToolCall ("true") marks it for the test-only hook
	// --test-hold-before-job-create (docs/operations.md); without that flag it means nothing.
	LabelTestHold = "toolgate.dev/test-hold"
	// LabelTool on a Job or Pod is the tool name, hashed when it is no label value.
	LabelTool = "toolgate.dev/tool"
	// LabelNetwork on a tool Pod is its sandbox network mode; NetworkPolicies select it.
	LabelNetwork = "toolgate.dev/network"
	// LabelPool on an unclaimed warm pool Pod names its pool; a claim removes it.
	LabelPool = "toolgate.dev/pool"
	// LabelTemplate on a warm pool Pod is the digest of the Pod template it was built from.
	LabelTemplate = "toolgate.dev/template"
	// AnnotationArgDigest on a Job or Pod is the call's status.argumentsDigest.
	AnnotationArgDigest = "toolgate.dev/arguments-digest"
	// AnnotationTool carries the tool's model-facing name exactly (LabelTool may be hashed).
	AnnotationTool = "toolgate.dev/tool"
	// AnnotationCallName carries the full call name (labels are limited to 63 characters).
	AnnotationCallName = "toolgate.dev/call-name"
	// AnnotationClaimedBy on a warm Pod is the uid of the call that claimed it.
	AnnotationClaimedBy = "toolgate.dev/claimed-by"
)

// Session sandboxes: the long-lived Pod in which one session's calls of one tool run
// (controllers/executor/sessionexec), and its Secret of TLS material (the same name).
const (
	// LabelSessionPod on a session Pod (and its Secret) is the digest of what it is for:
	// namespace, scope, session, requester and tool snapshot (its name holds it too).
	LabelSessionPod = "toolgate.dev/session-pod"
	// LabelSessionRequester on a session Pod is a digest of its requester (caps per
	// requester count by it); AnnotationSessionRequester carries the requester exactly.
	LabelSessionRequester      = "toolgate.dev/session-requester"
	AnnotationSessionRequester = "toolgate.dev/session-requester"
	// AnnotationSession on a session Pod is its spec.session; AnnotationSessionScope the
	// call's spec.scope.
	AnnotationSession      = "toolgate.dev/session-name"
	AnnotationSessionScope = "toolgate.dev/session-scope"
	// AnnotationSessionCA on a session Pod is the fingerprint of the operator process's
	// session CA it trusts: only that process can reach it.
	AnnotationSessionCA = "toolgate.dev/session-ca"
	// AnnotationSessionSpec on a session Pod is the digest of the spec it was created with.
	AnnotationSessionSpec = "toolgate.dev/session-spec"
	// AnnotationSessionIdleTimeout on a session Pod is how long it is kept idle (a Go
	// duration).
	AnnotationSessionIdleTimeout = "toolgate.dev/session-idle-timeout"
)

// Session workspaces: the PersistentVolumeClaim the operator creates for each session of
// a scope that declares a workspace, and where a tool Pod mounts it.
const (
	// WorkspaceVolume is the tool Pod's volume of the session's claim.
	WorkspaceVolume = "toolgate-workspace"
	// WorkspaceMountPath is where the tool container mounts it (ReadWrite or ReadOnly).
	WorkspaceMountPath = "/workspace"
	// LabelWorkspaceClaim on a Job and its Pod names the workspace claim the Pod mounts.
	LabelWorkspaceClaim = "toolgate.dev/workspace-claim"
	// LabelWorkspaceScope on a workspace claim is the ToolScope that declared it.
	LabelWorkspaceScope = "toolgate.dev/workspace-scope"
	// LabelWorkspaceSession on a workspace claim is its session, hashed when it is no label
	// value; AnnotationWorkspaceSession carries it exactly.
	LabelWorkspaceSession      = "toolgate.dev/workspace-session"
	AnnotationWorkspaceSession = "toolgate.dev/workspace-session"
	// AnnotationWorkspaceRequester on a workspace claim is the requester whose session it
	// is: a session is one requester's, so another requester naming the same session gets
	// a claim of its own.
	AnnotationWorkspaceRequester = "toolgate.dev/workspace-requester"
	// AnnotationWorkspaceRetention on a workspace claim is the retention it was created with
	// (a Go duration).
	AnnotationWorkspaceRetention = "toolgate.dev/workspace-retention"
	// AnnotationWorkspaceIdleSince on a workspace claim is when (RFC 3339) the session's
	// last call ended, as the operator last saw it; retention counts from there.
	AnnotationWorkspaceIdleSince = "toolgate.dev/workspace-idle-since"
	// AnnotationWorkspaceCredentials on a workspace claim lists the Secret keys of every
	// credential a call of the session was given while it mounted the claim ReadWrite (so
	// its body may have written the value into the session's files): JSON, an array of
	// WorkspaceCredential sorted by secret then key, without duplicates, at most
	// MaxWorkspaceCredentials. References only, never a value. The operator writes it
	// before such a call's Job exists; every later Pod that mounts the claim redacts those
	// values (EnvRedactPrefix).
	AnnotationWorkspaceCredentials = "toolgate.dev/workspace-credentials"
	// EnvRedactPrefix + i, in the signer container of a Pod that mounts a workspace claim
	// (and never in the body's), holds the value of the claim's i-th recorded credential,
	// by an optional secretKeyRef: the kubelet starts the container without it when the
	// Secret or key was deleted since. The runner redacts those values from the body's
	// output like the body's own credentials, and drops one shorter than
	// frame.MinCredentialBytes (it is not the body's: it refuses nothing). i runs from 0 to
	// MaxWorkspaceCredentials-1; the runner looks at no other.
	EnvRedactPrefix = "TOOLGATE_REDACT_"
)

// MaxEgressCredentials bounds the credentials of a Tool's sandbox.egress.allow (the CRD's).
const MaxEgressCredentials = 8

// EgressTrustEnv are the variables the body side sets to EgressCABundle for the tool, so
// that OpenSSL, Go, curl, Python requests, git and Node trust the egress CA. SSL_CERT_FILE
// is always set (the bundle holds the roots of a file the Tool named in it); each of the
// others only when the Tool sets no value of its own.
var EgressTrustEnv = []string{"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS"}

// MaxWorkspaceCredentials bounds AnnotationWorkspaceCredentials: a call that would record
// more is refused before its Job (its body never runs), rather than run unredacted.
const MaxWorkspaceCredentials = 32

// WorkspaceCredential is one entry of AnnotationWorkspaceCredentials: a Secret's name and
// a key of its data, in the claim's namespace.
type WorkspaceCredential struct {
	Secret string `json:"secret"`
	Key    string `json:"key"`
}

// The namespace's frame key Secret: the operator creates it (FrameKeySecretKey, 32 random
// bytes as frame.NewKey encodes them) in each namespace where it runs tool Pods, before the
// first; tool containers read it by secretKeyRef. A rotation moves the key to
// FrameKeySecretPrevious and writes a new one (docs/frame-key.md).
const (
	FrameKeySecret         = "toolgate-frame-key"
	FrameKeySecretKey      = "key"
	FrameKeySecretPrevious = "previous"
	// FrameKeySecretHandover holds the handover public keys of the masters (the operator
	// writes it: frame.EncodePublicKeys of frame.HandoverPublicKey of key, then previous),
	// which warm Pods read as EnvHandoverKeys: public, but kept beside the masters so that a
	// rotation reaches new pool Pods the same way.
	FrameKeySecretHandover = "handover-keys"
	// AttemptKeySecretSuffix makes an attempt's key Secret's name from its Job's: the
	// operator creates it (data FrameKeySecretKey: the attempt's key only) before the Job,
	// owned by the call, and deletes it with the Job.
	AttemptKeySecretSuffix = "-key"
)

// AttemptKeySecret is the name of the Secret holding the frame key of the attempt whose
// Job is jobName.
func AttemptKeySecret(jobName string) string { return jobName + AttemptKeySecretSuffix }

// Network modes as LabelNetwork's values.
const (
	NetworkNone   = "none"
	NetworkEgress = "egress"
	// NetworkProxy: network Egress with sandbox.egress.allow; the Pod reaches only the
	// egress proxy.
	NetworkProxy = "proxy-only"
)

// Containers, volumes and paths of a tool Pod.
const (
	// ToolContainerName is the body's container: the tool's image, the runner's body side
	// (BodyFlag) as its PID 1 and, under it, the tool. It holds no key.
	ToolContainerName = "tool"
	// SignerContainerName is the container that holds the attempt's frame key and signs
	// the frame (the runner from the operator's image, SignFlag): the body cannot reach its
	// environment, memory or files under any runtime (another container: other PID and
	// mount namespaces). Its termination message and log carry the frame.
	SignerContainerName = "toolgate-signer"
	// SignFlag starts the runner as the signer; BodyFlag as the body side, with the tool's
	// command after "--". The two talk over a Unix socket, SignerSocket, in LinkVolume.
	SignFlag = "--sign"
	BodyFlag = "--body"
	// LinkVolume is a small emptyDir both containers mount at LinkMountPath, for the socket
	// alone: a socket file works between two containers under every runtime (the loopback
	// does not when each container is a sandbox of its own, as on the local cluster's gVisor).
	LinkVolume    = "toolgate-link"
	LinkMountPath = "/var/run/toolgate-link"
	// SignerSocket is where the signer listens for the body side in the link volume.
	SignerSocket = LinkMountPath + "/signer.sock"
	// SessionRelay is the session signer's operator socket when the body side relays
	// (EnvSessionRelay).
	SessionRelay = LinkMountPath + "/operator.sock"
	// SignerAbstractSocket is the abstract Unix socket (Linux; the Pod's network namespace,
	// no file) the signer listens on too, and the body side tries first: the link volume is
	// only needed where the two containers do not share a network namespace (each a sandbox
	// of its own, as on the local cluster's gVisor), and a Pod without volumes starts sooner.
	SignerAbstractSocket = "@toolgate-signer"
	// RunnerInitContainerName copies the runner into RunVolume for images that lack it.
	RunnerInitContainerName = "toolgate-runner"
	// RunVolume is the emptyDir at RunMountPath: the copied runner and the arguments file.
	RunVolume = "toolgate-run"
	// RunMountPath is where RunVolume is mounted.
	RunMountPath = "/var/run/toolgate"
	// TmpVolume is the emptyDir mounted at TmpMountPath.
	TmpVolume    = "tmp"
	TmpMountPath = "/tmp"
	// CopiedRunner is where the init container puts the runner.
	CopiedRunner = RunMountPath + "/bin/runner"
	// ArgsFile is where the runner writes the arguments when the Pod has scratch volumes.
	ArgsFile = RunMountPath + "/args.json"
	// ImageRunner is the runner's path in the operator image and, by default, in a tool
	// image that carries it (body.runnerPath).
	ImageRunner = "/toolgate/runner"
	// TerminationPath is the kubelet's default termination message path.
	TerminationPath = "/dev/termination-log"
	// CopySelfFlag makes the runner copy itself to the path that follows.
	CopySelfFlag = "--copy-self"
)

// Credentials: Secret keys the kubelet resolves into the tool container (body.env[].valueFrom
// and body.secretFiles). The runner reads their values to redact them from the body's
// output; nothing the operator writes holds a value.
const (
	// EnvSecretEnv lists, comma-separated, the names of the body's env vars whose values
	// come from Secrets (body.env[].valueFrom): the runner redacts their values.
	EnvSecretEnv = "TOOLGATE_SECRET_ENV"
	// EnvSecretFiles lists, comma-separated, the names of the secret files under
	// SecretsMountPath, in body.secretFiles' order.
	EnvSecretFiles = "TOOLGATE_SECRET_FILES"
	// EnvSecretFilePrefix + i (the file's index in EnvSecretFiles) is an env var holding
	// the same Secret key as file i. It makes a missing Secret or key fail the container's
	// start at once (CreateContainerConfigError) rather than leave the projected volume
	// (whose sources are optional) without it, and gives the runner the value to redact.
	// The runner removes these variables from the body's environment.
	EnvSecretFilePrefix = "TOOLGATE_SECRET_FILE_"
	// SecretsVolume is the projected volume of the secret files.
	SecretsVolume = "toolgate-secrets"
	// SecretsMountPath is where the tool container mounts it, read-only: file <name> is
	// SecretsMountPath/<name>, mode 0440.
	SecretsMountPath = "/run/secrets/toolgate"
)
