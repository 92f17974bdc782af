package toolcall

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// The Pod builder's test inputs and lookups (internal/podspec has its own), for the tests
// here that build a Job around an executor's, a pool's or a feature's work.

func testJobInput(mut func(*toolgatev1alpha1.ToolSpec)) podspec.Input {
	spec := &toolgatev1alpha1.ToolSpec{
		Timeout: &metav1.Duration{Duration: 90 * time.Second},
		Body: toolgatev1alpha1.ToolBody{
			Image:   "example/echo:1",
			Command: []string{"/echo"},
			Args:    []string{"-v"},
			Env:     []toolgatev1alpha1.EnvVar{{Name: "MODE", Value: "fast"}},
		},
	}
	if mut != nil {
		mut(spec)
	}
	call := &toolgatev1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "agents", UID: "call-uid"},
		Spec:       toolgatev1alpha1.ToolCallSpec{Tool: "echo", Requester: "alice"},
	}
	return podspec.Input{Call: call, Tool: spec, Arguments: []byte(`{"text":"hi"}`), Digest: "sha256:abc", Attempt: 1}
}

func containerIn(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	return nil
}

func toolIn(spec corev1.PodSpec) corev1.Container {
	return *containerIn(&spec, podcontract.ToolContainerName)
}

func signerOf(spec *corev1.PodSpec) *corev1.Container {
	return containerIn(spec, podcontract.SignerContainerName)
}

func secretKeyRef(ref toolgatev1alpha1.CredentialKeySelector) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key}}
}
