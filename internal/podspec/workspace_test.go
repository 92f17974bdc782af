package podspec

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// A Pod that mounts a claim recording credentials gets each recorded value in its signer,
// by an optional reference, whatever its own tool and access; its body gets nothing new.
func TestBuildJobGivesTheWorkspaceCredentialsToTheSignerOnly(t *testing.T) {
	recorded := []podcontract.WorkspaceCredential{wsCred("deploy", "config"), wsCred("github", "token")}
	for _, readOnly := range []bool{false, true} {
		bare := BuildJob(testJobInput(nil), DefaultOptions()).Spec.Template.Spec
		in := testJobInput(nil)
		in.Workspace = &WorkspaceMount{ClaimName: "toolgate-ws-coding-0123", ReadOnly: readOnly, Credentials: recorded}
		spec := BuildJob(in, DefaultOptions()).Spec.Template.Spec
		want := slices.Concat(signerIn(bare).Env, []corev1.EnvVar{
			{Name: podcontract.EnvRedactPrefix + "0", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "deploy"}, Key: "config", Optional: ptr.To(true)}}},
			{Name: podcontract.EnvRedactPrefix + "1", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "github"}, Key: "token", Optional: ptr.To(true)}}}})
		if d := diff(signerIn(spec).Env, want); d != "" {
			t.Errorf("readOnly %v: signer env (-got +want):\n%s", readOnly, d)
		}
		if d := diff(toolIn(spec).Env, toolIn(bare).Env); d != "" {
			t.Errorf("readOnly %v: the body's env changed (-got +want):\n%s", readOnly, d)
		}
	}
}

func TestBuildJobMountsTheWorkspaceInTheToolContainerOnly(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		in := testJobInput(nil) // no runnerInImage: the init container must not mount it
		in.Workspace = &WorkspaceMount{ClaimName: "toolgate-ws-coding-0123", ReadOnly: readOnly}
		spec := BuildJob(in, DefaultOptions()).Spec.Template.Spec
		want := corev1.Volume{Name: podcontract.WorkspaceVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "toolgate-ws-coding-0123", ReadOnly: readOnly}}}
		if diff := cmp.Diff(want, spec.Volumes[len(spec.Volumes)-1]); diff != "" {
			t.Errorf("readOnly %v: volume (-want +got):\n%s", readOnly, diff)
		}
		mount := corev1.VolumeMount{Name: podcontract.WorkspaceVolume, MountPath: podcontract.WorkspaceMountPath, ReadOnly: readOnly}
		if mounts := toolIn(spec).VolumeMounts; cmp.Diff(mount, mounts[len(mounts)-1]) != "" {
			diff := cmp.Diff(mount, mounts[len(mounts)-1])
			t.Errorf("readOnly %v: mount (-want +got):\n%s", readOnly, diff)
		}
		for _, c := range spec.InitContainers {
			for _, m := range c.VolumeMounts {
				if m.Name == podcontract.WorkspaceVolume {
					t.Errorf("init container %s mounts the workspace", c.Name)
				}
			}
		}
	}
	if spec := BuildJob(testJobInput(nil), DefaultOptions()).Spec.Template.Spec; len(scratchVolumes(spec)) != 2 {
		t.Errorf("no workspace: volumes %v", spec.Volumes)
	}
}

func wsCred(secret, key string) podcontract.WorkspaceCredential {
	return podcontract.WorkspaceCredential{Secret: secret, Key: key}
}
