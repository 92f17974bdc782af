package podspec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// SessionTLSVolume is the session Pod's volume of its signer's TLS material (a Secret of
// the Pod's name, podcontract.SessionTLSCert, SessionTLSKey, SessionClientCA), mounted into
// the signer container only.
const SessionTLSVolume = "toolgate-session-tls"

// SessionPodSpec is the spec of a session's sandbox Pod for one tool: the cold Pod's
// (buildPodSpec: the same sandbox, security context, resources, runtime class, volumes,
// credentials and the same two containers, both in session mode) without anything of a
// call — no arguments, digest, attempt key, traceparent or egress proxy URL with its grant
// (those come in each call's Handover) — and without activeDeadlineSeconds (each call's
// deadline is the runner's and the operator's; the Pod lives while its session is active).
// The signer listens for the operator on podcontract.SessionPort with the TLS material of
// the Secret tlsSecret. in.EgressProxyAlias and in.EgressCA are kept (the same for every
// call of the tool); a workspace is added by the features that prepare the Pod.
func SessionPodSpec(in Input, opts Options, tlsSecret string) corev1.PodSpec {
	bare := in
	bare.Arguments, bare.Digest, bare.Traceparent, bare.EgressProxyURL = nil, "", "", ""
	ps := buildPodSpec(bare, opts, 0)
	ps.ActiveDeadlineSeconds = nil
	signer := signerOf(&ps)
	signer.Env = slices.Concat(credentialEnv(in.Tool.Body), egressRedactEnv(in.Tool.Sandbox), []corev1.EnvVar{
		literalEnv(podcontract.EnvSession, podcontract.SessionOn),
		literalEnv(podcontract.EnvArgsFile, argsFileFor(in.Tool.Sandbox.Scratch)),
		literalEnv(podcontract.EnvMaxOutput, strconv.FormatInt(MaxOutput(in.Tool), 10)),
		// A Handover is signed for this Pod's uid (frame.SignHandover).
		{Name: podcontract.EnvPodUID, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.uid"}}},
		handoverKeysEnv(),
	})
	signer.VolumeMounts = append(signer.VolumeMounts, corev1.VolumeMount{Name: SessionTLSVolume,
		MountPath: podcontract.SessionTLSDir, ReadOnly: true})
	tool := toolContainerOf(&ps)
	tool.Env = append(tool.Env, literalEnv(podcontract.EnvSession, podcontract.SessionOn))
	if opts.RuntimeClassOf(in.Tool.Sandbox) != "" {
		// The runtime's sandbox may hold the Pod's address (gVisor): the body side, inside it,
		// takes the operator's connections and relays them to the signer.
		relay := literalEnv(podcontract.EnvSessionRelay, podcontract.SessionRelay)
		signer.Env = append(signer.Env, relay)
		tool.Env = append(tool.Env, relay)
	}
	ps.Volumes = append(ps.Volumes, corev1.Volume{Name: SessionTLSVolume, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: tlsSecret, DefaultMode: ptrInt32(0o440)}}})
	return ps
}

func ptrInt32(v int32) *int32 { return &v }

// SessionSpecDigest identifies a session Pod's spec: 32 hex of the SHA-256 of its JSON. A
// Pod whose recorded digest is not the one the call's snapshot builds now (a Tool edit, a
// credential recorded on the session's workspace since) is replaced, never used.
func SessionSpecDigest(ps *corev1.PodSpec) string {
	b, err := json.Marshal(ps)
	if err != nil {
		return "" // a PodSpec always marshals; an empty digest matches no Pod
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// SessionToolDigest identifies the tool snapshot a session Pod is for: 16 hex of the
// SHA-256 of the snapshot's spec (a Tool edit gives another Pod name).
func SessionToolDigest(spec *toolgatev1alpha1.ToolSpec) string {
	b, err := json.Marshal(spec)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// SessionCallEnv is a session call's own environment, handed over with its Handover
// ("NAME=value", unescaped: no kubelet expands it): the egress proxy URL with the
// attempt's grant reaches the body per call, never the Pod spec. Nothing without one.
func SessionCallEnv(in Input) []string {
	var env []string
	for _, e := range egressProxyEnv(in.EgressProxyURL) {
		env = append(env, e.Name+"="+in.EgressProxyURL)
	}
	return env
}

// SandboxNetworkLabel is the podcontract.LabelNetwork value of a Pod of sandbox s.
func SandboxNetworkLabel(s toolgatev1alpha1.Sandbox) string { return sandboxNetworkLabel(s) }
