package podspec

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

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
func signerEnv(in Input) []corev1.EnvVar {
	env := append(credentialEnv(in.Tool.Body), egressRedactEnv(in.Tool.Sandbox)...)
	if in.Traceparent != "" {
		env = append(env, literalEnv(podcontract.EnvTraceparent, in.Traceparent))
	}
	return append(env,
		literalEnv(podcontract.EnvArgs, string(in.Arguments)),
		literalEnv(podcontract.EnvArgsDigest, in.Digest),
		literalEnv(podcontract.EnvArgsFile, argsFileFor(in.Tool.Sandbox.Scratch)),
		literalEnv(podcontract.EnvMaxOutput, strconv.FormatInt(MaxOutput(in.Tool), 10)),
		literalEnv(podcontract.EnvDeadlineMs, strconv.FormatInt(TimeoutSeconds(in.Tool)*1000, 10)),
		attemptKeyEnv(JobName(in.Call.Name, in.Attempt)),
	)
}

// toolOTLPEnv points a body's OpenTelemetry SDK at the collector the operator names
// (opts.ToolOTLPEndpoint): OTEL_EXPORTER_OTLP_ENDPOINT, the base URL the SDK appends
// /v1/traces to, and OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, since the endpoint speaks
// OTLP/HTTP and some SDKs default to gRPC. A name the Tool's body.env already sets is
// the Tool's. Nothing without an endpoint. The same for cold and warm Pods (the warm
// template digest covers it: a changed endpoint replaces idle Pods).
func toolOTLPEnv(bodyEnv []toolgatev1alpha1.EnvVar, opts Options) []corev1.EnvVar {
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

// bodyEnvVar is one body.env entry in the Pod API: a literal (kept as written, with the
// kubelet's $(VAR) expansion) or a Secret key the kubelet resolves. A missing Secret or key
// is not optional: the kubelet refuses to create the container (CreateContainerConfigError),
// which ends the attempt at once (credentialMissing).
func bodyEnvVar(e toolgatev1alpha1.EnvVar) corev1.EnvVar {
	if e.ValueFrom == nil {
		return corev1.EnvVar{Name: e.Name, Value: e.Value}
	}
	return corev1.EnvVar{Name: e.Name, ValueFrom: secretKeyRef(e.ValueFrom.SecretKeyRef)}
}

func secretKeyRef(ref toolgatev1alpha1.CredentialKeySelector) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key}}
}

// credentialEnv gives the signer the values to redact, which the body's container holds
// for the body: each of the body's credential variables, by the same reference, their
// names, the names of its secret files, and each file's value as TOOLGATE_SECRET_FILE_<i>
// (a required reference: a missing Secret or key stops the signer's creation, where the
// projected volume's optional source would not). None for a body without credentials. The
// credentials are the ones policies see (tool.credentials, catalog.Credentials: body.env
// valueFrom, then body.secretFiles), walked here without the catalog, which needs a client.
func credentialEnv(body toolgatev1alpha1.ToolBody) []corev1.EnvVar {
	var env []corev1.EnvVar
	var vars, files []string
	for _, e := range body.Env {
		if e.ValueFrom != nil {
			env = append(env, bodyEnvVar(e))
			vars = append(vars, e.Name)
		}
	}
	for _, f := range body.SecretFiles {
		env = append(env, corev1.EnvVar{Name: podcontract.EnvSecretFilePrefix + strconv.Itoa(len(files)), ValueFrom: secretKeyRef(f.SecretKeyRef)})
		files = append(files, f.Name)
	}
	if len(vars) > 0 {
		env = append(env, literalEnv(podcontract.EnvSecretEnv, strings.Join(vars, ",")))
	}
	if len(files) > 0 {
		env = append(env, literalEnv(podcontract.EnvSecretFiles, strings.Join(files, ",")))
	}
	return env
}

// egressProxyEnv is the proxy environment of a body with a proxy URL; nothing without.
func egressProxyEnv(proxyURL string) []corev1.EnvVar {
	if proxyURL == "" {
		return nil
	}
	var env []corev1.EnvVar
	for _, name := range []string{podcontract.EnvHTTPSProxy, podcontract.EnvHTTPProxy, podcontract.EnvHTTPSProxyLower, podcontract.EnvHTTPProxyLower} {
		env = append(env, literalEnv(name, proxyURL))
	}
	return env
}

// egressCAEnv gives the body's container the egress CA (EnvEgressCA), for a tool whose
// requests the proxy injects into; nothing otherwise.
func egressCAEnv(ca string) []corev1.EnvVar {
	if ca == "" {
		return nil
	}
	return []corev1.EnvVar{literalEnv(podcontract.EnvEgressCA, ca)}
}

// egressRedactEnv gives the signer each egress credential's value to redact, by a required
// reference (EnvRedactEgressPrefix): a body the upstream echoes the token back to cannot
// print it. The body's container never gets it.
func egressRedactEnv(s toolgatev1alpha1.Sandbox) []corev1.EnvVar {
	var env []corev1.EnvVar
	for i, r := range EgressCredentials(s) {
		env = append(env, corev1.EnvVar{Name: podcontract.EnvRedactEgressPrefix + strconv.Itoa(i), ValueFrom: secretKeyRef(r.Credential.SecretKeyRef)})
	}
	return env
}

// attemptKeyEnv is the signer's attempt key, by reference to the attempt's key Secret (the
// kubelet resolves it): never a value in the spec.
func attemptKeyEnv(jobName string) corev1.EnvVar {
	return corev1.EnvVar{Name: podcontract.EnvAttemptKey, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: podcontract.AttemptKeySecret(jobName)}, Key: podcontract.FrameKeySecretKey}}}
}

// handoverKeysEnv is a warm signer's handover public keys, from the namespace's Secret: the
// Pod holds nothing secret before its Handover.
func handoverKeysEnv() corev1.EnvVar {
	return corev1.EnvVar{Name: podcontract.EnvHandoverKeys, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: podcontract.FrameKeySecret}, Key: podcontract.FrameKeySecretHandover}}}
}

// redactEnv is the signer's environment for a claim's record: the i-th recorded value as
// EnvRedactPrefix+i, by an optional reference. A Secret or key deleted since does not stop
// the session's later calls: its value, which the kubelet no longer has, goes unredacted
// (as does the old value of a Secret rotated since: the kubelet gives the current one).
func redactEnv(refs []podcontract.WorkspaceCredential) []corev1.EnvVar {
	env := make([]corev1.EnvVar, 0, len(refs))
	for i, r := range refs {
		env = append(env, corev1.EnvVar{Name: podcontract.EnvRedactPrefix + strconv.Itoa(i), ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: r.Secret}, Key: r.Key, Optional: ptr.To(true)}}})
	}
	return env
}
