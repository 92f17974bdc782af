package credentials

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestCredentialMissing(t *testing.T) {
	status := func(reason, msg string) *corev1.ContainerStatus {
		return &corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	}
	for _, tc := range []struct {
		name string
		cs   *corev1.ContainerStatus
		want bool
	}{
		{"Secret not found", status("CreateContainerConfigError", `secret "github" not found`), true},
		{"Secret not found, plural", status("CreateContainerConfigError", `secrets "github" not found`), true},
		{"key not found", status("CreateContainerConfigError", "couldn't find key token in Secret agents/github"), true},
		{"ConfigMap not found", status("CreateContainerConfigError", `configmap "c" not found`), false},
		{"runAsNonRoot", status("CreateContainerConfigError", "container has runAsNonRoot and image will run as root"), false},
		{"other reason", status("ErrImagePull", `secret "github" not found`), false},
		{"running", &corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}, false},
		{"none", nil, false},
	} {
		if got := missing(tc.cs); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
