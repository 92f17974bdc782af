package podspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// A warm Pod is the cold Pod of the same spec but for what a Pod started before its call
// cannot have (arguments, digest, deadline) and what the Handover needs (stdin, warm mode).
func TestWarmPodIsTheColdPodWithoutTheCall(t *testing.T) {
	in := testJobInput(nil)
	cold := BuildJob(in, DefaultOptions()).Spec.Template.Spec
	warm := WarmPodSpec(in.Tool, DefaultOptions())
	env := envMap(signerIn(warm).Env)
	for _, name := range []string{podcontract.EnvArgs, podcontract.EnvArgsDigest, podcontract.EnvAttemptKey} {
		if _, ok := env[name]; ok {
			t.Errorf("warm signer env has %s: a pool Pod knows no call and holds no key", name)
		}
	}
	if env[podcontract.EnvWarm] != "1" || envMap(toolIn(warm).Env)["MODE"] != "fast" {
		t.Errorf("warm env %v", env)
	}
	wantSecretRef(t, signerIn(warm).Env, podcontract.EnvHandoverKeys, corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: podcontract.FrameKeySecret}, Key: podcontract.FrameKeySecretHandover})
	s := signerOf(&warm)
	if !s.Stdin || !s.StdinOnce || warm.ActiveDeadlineSeconds != nil {
		t.Errorf("stdin %v stdinOnce %v deadline %v", s.Stdin, s.StdinOnce, warm.ActiveDeadlineSeconds)
	}
	s.Env, signerOf(&cold).Env = nil, nil
	s.Stdin, s.StdinOnce = false, false
	warm.ActiveDeadlineSeconds = cold.ActiveDeadlineSeconds
	if d := diff(cold, warm); d != "" {
		t.Errorf("warm Pod differs from the cold Pod (-cold +warm):\n%s", d)
	}
}
