package podspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

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
func linkVolumes(sandbox toolgatev1alpha1.Sandbox, opts Options) []corev1.Volume {
	if !needsLinkVolume(sandbox, opts) {
		return nil
	}
	return []corev1.Volume{linkVolume()}
}

func linkMounts(sandbox toolgatev1alpha1.Sandbox, opts Options) []corev1.VolumeMount {
	if !needsLinkVolume(sandbox, opts) {
		return nil
	}
	return []corev1.VolumeMount{linkMount()}
}

// needsLinkVolume: also where the body side writes the egress CA bundle (EgressCABundle).
func needsLinkVolume(sandbox toolgatev1alpha1.Sandbox, opts Options) bool {
	return sandbox.Scratch != toolgatev1alpha1.ScratchNone || opts.RuntimeClassOf(sandbox) != "" || HasEgressCredential(sandbox)
}

// linkVolume holds the socket the body side reaches the signer by, and nothing else.
func linkVolume() corev1.Volume {
	return corev1.Volume{Name: podcontract.LinkVolume, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Mi"))}}}
}

func linkMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: podcontract.LinkVolume, MountPath: podcontract.LinkMountPath}
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

// withWorkspace adds the session's claim to a tool Pod's spec, mounted in the tool
// container only (the runner init container has no business there), and the values its
// files may hold to the signer's environment only (the body is given nothing new).
func WithWorkspace(spec corev1.PodSpec, m *WorkspaceMount) corev1.PodSpec {
	if m == nil {
		return spec
	}
	spec.Volumes = append(spec.Volumes, workspaceVolume(m))
	tool, signer := toolContainerOf(&spec), signerOf(&spec)
	tool.VolumeMounts = append(tool.VolumeMounts, workspaceVolumeMount(m))
	signer.Env = append(signer.Env, redactEnv(m.Credentials)...)
	return spec
}

// secretFileMode is the mode of a secret file: read-only, for the Pod's fsGroup (the
// runner's and the body's group) and root.
const secretFileMode int32 = 0o440

// withSecretFiles mounts the body's secret files read-only at SecretsMountPath: one
// projected volume, a source per file. The sources are optional so that the kubelet never
// waits on a mount for a missing Secret; the required TOOLGATE_SECRET_FILE_<i> reference
// (credentialEnv) makes it refuse the container instead.
func withSecretFiles(spec corev1.PodSpec, body toolgatev1alpha1.ToolBody) corev1.PodSpec {
	if len(body.SecretFiles) == 0 {
		return spec
	}
	sources := make([]corev1.VolumeProjection, 0, len(body.SecretFiles))
	for _, f := range body.SecretFiles {
		sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: f.SecretKeyRef.Name},
			Items:                []corev1.KeyToPath{{Key: f.SecretKeyRef.Key, Path: f.Name, Mode: ptr.To(secretFileMode)}},
			Optional:             ptr.To(true),
		}})
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: podcontract.SecretsVolume, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{Sources: sources, DefaultMode: ptr.To(secretFileMode)}}})
	tool := toolContainerOf(&spec)
	tool.VolumeMounts = append(tool.VolumeMounts, corev1.VolumeMount{
		Name: podcontract.SecretsVolume, MountPath: podcontract.SecretsMountPath, ReadOnly: true})
	return spec
}

// WorkspaceMount is the session workspace one attempt's Pod mounts at /workspace.
type WorkspaceMount struct {
	// ClaimName is the session's PersistentVolumeClaim.
	ClaimName string
	// ReadOnly mounts it read-only (sandbox.workspace ReadOnly).
	ReadOnly bool
	// Credentials are the claim's record of the credentials its files may hold, which the
	// Pod's signer redacts (controllers/workspace/credentials.go).
	Credentials []podcontract.WorkspaceCredential
}

// workspaceVolume and workspaceVolumeMount mount the session's claim at /workspace.
func workspaceVolume(m *WorkspaceMount) corev1.Volume {
	return corev1.Volume{Name: podcontract.WorkspaceVolume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: m.ClaimName, ReadOnly: m.ReadOnly}}}
}

func workspaceVolumeMount(m *WorkspaceMount) corev1.VolumeMount {
	return corev1.VolumeMount{Name: podcontract.WorkspaceVolume, MountPath: podcontract.WorkspaceMountPath, ReadOnly: m.ReadOnly}
}
