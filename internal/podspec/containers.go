package podspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

func runnerInitContainer(opts Options) corev1.Container {
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

// signerContainer is the container that holds the attempt's key and signs the frame: the
// runner from the operator's image, which runs nothing itself. The body cannot reach it
// (another container: its own PID and mount namespaces, whatever the runtime); it talks to
// the body side over a Unix socket in the link volume only. Its resources are its own, small and fixed
// but for memory, which grows with the output it may keep (and redact, and encode).
func signerContainer(opts Options, sandbox toolgatev1alpha1.Sandbox, maxOut int64, env []corev1.EnvVar) corev1.Container {
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
