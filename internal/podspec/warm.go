package podspec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// WarmPodSpec is the cold Pod's spec (buildPodSpec: same sandbox, security context,
// resources, runtime class, volumes and the same two containers) for a Pod started before
// its call: no arguments and no key in it (they come in the Handover, on the signer's
// stdin), the signer in warm mode with stdin open for one attach, and no
// activeDeadlineSeconds yet (set at claim to the time already run plus the call's timeout:
// it may be set or lowered on a running Pod, never raised).
func WarmPodSpec(spec *toolgatev1alpha1.ToolSpec, opts Options) corev1.PodSpec {
	ps := buildPodSpec(Input{Call: &toolgatev1alpha1.ToolCall{}, Tool: spec}, opts, 0)
	ps.ActiveDeadlineSeconds = nil
	signer := signerOf(&ps)
	signer.Stdin, signer.StdinOnce = true, true
	signer.Env = []corev1.EnvVar{
		literalEnv(podcontract.EnvWarm, podcontract.WarmOn),
		literalEnv(podcontract.EnvArgsFile, argsFileFor(spec.Sandbox.Scratch)),
		literalEnv(podcontract.EnvMaxOutput, strconv.FormatInt(MaxOutput(spec), 10)),
		// A Handover is signed for this Pod's uid (frame.SignHandover).
		{Name: podcontract.EnvPodUID, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.uid"}}},
		handoverKeysEnv(),
	}
	return ps
}

// WarmTemplateDigest identifies the Pod a spec gives: 32 hex of the SHA-256 of the Pod
// spec's JSON (no key is in it: the master comes from the namespace's Secret). A Tool
// edit, or an operator started with other Pod settings, gives another digest; its old Pods
// are replaced and never claimed.
func WarmTemplateDigest(spec *toolgatev1alpha1.ToolSpec, opts Options) string {
	b, err := json.Marshal(WarmPodSpec(spec, opts))
	if err != nil {
		return "" // a PodSpec always marshals; an empty digest matches no Pod
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
