package podspec

import (
	"testing"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

func withCredentials(s *toolgatev1alpha1.ToolSpec) {
	s.Body.Env = append(s.Body.Env, toolgatev1alpha1.EnvVar{Name: "GITHUB_TOKEN", ValueFrom: &toolgatev1alpha1.EnvVarSource{
		SecretKeyRef: toolgatev1alpha1.CredentialKeySelector{Name: "github", Key: "token"}}})
	s.Body.SecretFiles = []toolgatev1alpha1.SecretFile{
		{Name: "kubeconfig", SecretKeyRef: toolgatev1alpha1.CredentialKeySelector{Name: "deploy", Key: "config"}},
		{Name: "ca.pem", SecretKeyRef: toolgatev1alpha1.CredentialKeySelector{Name: "deploy", Key: "ca"}},
	}
}

func ref(name, key string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
}

// The kubelet resolves every credential from a required reference (so a missing one stops
// the container), the runner learns which values to redact by name, and the files are one
// read-only projected volume whose sources are optional (so no mount ever waits).
func TestBuildJobCredentials(t *testing.T) {
	spec := BuildJob(testJobInput(withCredentials), DefaultOptions()).Spec.Template.Spec
	body := map[string]corev1.EnvVar{}
	for _, e := range toolIn(spec).Env {
		body[e.Name] = e
	}
	for name, want := range map[string]corev1.EnvVar{
		"MODE":         {Name: "MODE", Value: "fast"},
		"GITHUB_TOKEN": {Name: "GITHUB_TOKEN", ValueFrom: ref("github", "token")},
	} {
		if d := diff(body[name], want); d != "" {
			t.Errorf("body env %s (-got +want):\n%s", name, d)
		}
	}
	if len(body) != 2 {
		t.Errorf("the body's container gets more than its own env: %v", body)
	}
	// The signer redacts: it gets the same values, by the same references, and the lists.
	env := map[string]corev1.EnvVar{}
	for _, e := range signerIn(spec).Env {
		env[e.Name] = e
	}
	for name, want := range map[string]corev1.EnvVar{
		"GITHUB_TOKEN":                        {Name: "GITHUB_TOKEN", ValueFrom: ref("github", "token")},
		podcontract.EnvSecretEnv:              {Name: podcontract.EnvSecretEnv, Value: "GITHUB_TOKEN"},
		podcontract.EnvSecretFiles:            {Name: podcontract.EnvSecretFiles, Value: "kubeconfig,ca.pem"},
		podcontract.EnvSecretFilePrefix + "0": {Name: podcontract.EnvSecretFilePrefix + "0", ValueFrom: ref("deploy", "config")},
		podcontract.EnvSecretFilePrefix + "1": {Name: podcontract.EnvSecretFilePrefix + "1", ValueFrom: ref("deploy", "ca")},
	} {
		if d := diff(env[name], want); d != "" {
			t.Errorf("env %s (-got +want):\n%s", name, d)
		}
	}
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == podcontract.SecretsVolume {
			vol = &spec.Volumes[i]
		}
	}
	if vol == nil || vol.Projected == nil {
		t.Fatalf("no projected volume %s in %+v", podcontract.SecretsVolume, spec.Volumes)
	}
	mode := ptr.To[int32](0o440)
	wantSources := []corev1.VolumeProjection{
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "deploy"},
			Items: []corev1.KeyToPath{{Key: "config", Path: "kubeconfig", Mode: mode}}, Optional: ptr.To(true)}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "deploy"},
			Items: []corev1.KeyToPath{{Key: "ca", Path: "ca.pem", Mode: mode}}, Optional: ptr.To(true)}},
	}
	if d := diff(vol.Projected.Sources, wantSources); d != "" {
		t.Errorf("sources (-got +want):\n%s", d)
	}
	wantMount := corev1.VolumeMount{Name: podcontract.SecretsVolume, MountPath: podcontract.SecretsMountPath, ReadOnly: true}
	mounts := toolIn(spec).VolumeMounts
	if len(mounts) == 0 || diff(mounts[len(mounts)-1], wantMount) != "" {
		t.Errorf("mounts %+v, want the last to be %+v", mounts, wantMount)
	}
	for _, c := range spec.InitContainers {
		for _, m := range c.VolumeMounts {
			if m.Name == podcontract.SecretsVolume {
				t.Errorf("init container %s mounts the secrets", c.Name)
			}
		}
	}
}

// A body without credentials gets none of the credential plumbing.
func TestBuildJobNoCredentials(t *testing.T) {
	spec := BuildJob(testJobInput(nil), DefaultOptions()).Spec.Template.Spec
	for _, e := range append(signerIn(spec).Env, toolIn(spec).Env...) {
		if e.Name == podcontract.EnvSecretEnv || e.Name == podcontract.EnvSecretFiles {
			t.Errorf("env %s on a body without credentials", e.Name)
		}
	}
	for _, v := range spec.Volumes {
		if v.Name == podcontract.SecretsVolume {
			t.Errorf("volume %s on a body without credentials", v.Name)
		}
	}
}
