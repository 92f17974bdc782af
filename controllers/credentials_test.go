package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
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
	spec := BuildJob(testJobInput(withCredentials), DefaultJobOptions()).Spec.Template.Spec
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
	spec := BuildJob(testJobInput(nil), DefaultJobOptions()).Spec.Template.Spec
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
		if got := credentialMissing(tc.cs); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A warm pool never serves a tool with credentials: its Pods would hold the value before
// any call.
func TestWarmPoolSizeWithCredentials(t *testing.T) {
	spec := testJobInput(withCredentials).Tool
	spec.WarmPool = &toolgatev1alpha1.WarmPool{Size: 3}
	if n := warmPoolSize(spec); n != 0 {
		t.Errorf("warm pool size %d for a tool with credentials, want 0", n)
	}
	spec.Body = testJobInput(nil).Tool.Body
	if n := warmPoolSize(spec); n != 3 {
		t.Errorf("warm pool size %d without credentials, want 3", n)
	}
}

// The pipeline core does not import pkg/frame: reportOf passes the runner's reason through
// as Report.RunnerReason, and Normalize recognises CredentialTooShort by its own copy of
// the name, which must be the runner's.
func TestRunnerReasonsAgreeWithThePipeline(t *testing.T) {
	if pipeline.RunnerCredentialTooShort != frame.ReasonCredentialTooShort {
		t.Errorf("pipeline.RunnerCredentialTooShort %q, frame.ReasonCredentialTooShort %q",
			pipeline.RunnerCredentialTooShort, frame.ReasonCredentialTooShort)
	}
	r := reportOf(frame.Frame{ExitCode: frame.ExitRunnerError, Reason: frame.ReasonCredentialTooShort, Redactions: 2})
	if r.RunnerReason != pipeline.RunnerCredentialTooShort || r.Redactions != 2 {
		t.Errorf("report %+v: the runner's reason and count are not carried", r)
	}
}

// The kubelet's words name the missing Secret or key: they reach the Executed condition
// (bounded), never the result.
func TestCredentialMissingDetail(t *testing.T) {
	msg := `secret "github" not found`
	pod := podWith(corev1.PodPending, "", configError(msg))
	o, ok := podOutcome(context.Background(), pod, time.Now(), pipeline.Outcome{Attempt: 1}, nil)
	if !ok || o.TerminationReason != pipeline.TerminationCredentialMissing || o.Detail != "kubelet: "+msg {
		t.Fatalf("outcome %+v (ended %v), want CredentialMissing with detail %q", o, ok, msg)
	}
	res := pipeline.Normalize(o, pipeline.NormalizeOptions{})
	if strings.Contains(res.Error, "github") || strings.Contains(fmt.Sprint(res.Content), "github") {
		t.Errorf("result names the Secret: %q", res.Content)
	}
	if got := executedMessage(res, o); !strings.HasSuffix(got, "(kubelet: "+msg+")") || !strings.HasPrefix(got, res.Error) {
		t.Errorf("Executed message %q, want the result's error and the kubelet's words", got)
	}
	long := configError(`secret "` + strings.Repeat("x", 2*maxDetail) + `" not found`)
	o, _ = podOutcome(context.Background(), podWith(corev1.PodPending, "", long), time.Now(), pipeline.Outcome{Attempt: 1}, nil)
	if len(o.Detail) > maxDetail {
		t.Errorf("detail of %d bytes, want at most %d", len(o.Detail), maxDetail)
	}
}
