package podspec

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

func testJobInput(mut func(*toolgatev1alpha1.ToolSpec)) Input {
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
	return Input{Call: call, Tool: spec, Arguments: []byte(`{"text":"hi"}`), Digest: "sha256:abc", Attempt: 1}
}

func TestBuildJobSandbox(t *testing.T) {
	job := BuildJob(testJobInput(nil), DefaultOptions())
	if job.Name != "hello-1" || job.Namespace != "agents" {
		t.Fatalf("name = %s/%s", job.Namespace, job.Name)
	}
	// activeDeadlineSeconds: the 90 s timeout plus the default 30 s start allowance.
	if *job.Spec.BackoffLimit != 0 || *job.Spec.ActiveDeadlineSeconds != 120 || job.Spec.TTLSecondsAfterFinished != nil {
		t.Fatalf("job spec: backoff %d deadline %d ttl %v", *job.Spec.BackoffLimit, *job.Spec.ActiveDeadlineSeconds, job.Spec.TTLSecondsAfterFinished)
	}
	pod := job.Spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || *pod.ActiveDeadlineSeconds != 120 {
		t.Fatalf("pod restart %s deadline %d", pod.RestartPolicy, *pod.ActiveDeadlineSeconds)
	}
	if *pod.AutomountServiceAccountToken || *pod.EnableServiceLinks {
		t.Fatal("pod must not mount a token nor get service links")
	}
	if !*pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatal("pod security context not restricted")
	}
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		sc := c.SecurityContext
		if *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || !*sc.RunAsNonRoot ||
			diff(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) != "" {
			t.Errorf("container %s security context not restricted: %+v", c.Name, sc)
		}
		if len(c.Resources.Requests) == 0 || len(c.Resources.Limits) == 0 {
			t.Errorf("container %s has no requests or limits", c.Name)
		}
	}
	if got := job.Spec.Template.Labels[podcontract.LabelNetwork]; got != podcontract.NetworkNone {
		t.Errorf("network label = %q", got)
	}
}

func TestBuildJobRunnerPaths(t *testing.T) {
	initJob := BuildJob(testJobInput(nil), DefaultOptions())
	pod := initJob.Spec.Template.Spec
	if len(pod.InitContainers) != 1 || pod.InitContainers[0].Image != DefaultOptions().RunnerImage {
		t.Fatalf("init container: %+v", pod.InitContainers)
	}
	if d := diff(toolIn(pod).Command, []string{podcontract.CopiedRunner, podcontract.BodyFlag, "--", "/echo", "-v"}); d != "" {
		t.Errorf("command (-got +want):\n%s", d)
	}
	if s := signerIn(pod); s.Image != DefaultOptions().RunnerImage || diff(s.Command, []string{podcontract.ImageRunner, podcontract.SignFlag}) != "" {
		t.Errorf("signer %s %v", s.Image, s.Command)
	}
	if pod.Containers[0].Name != podcontract.SignerContainerName {
		t.Error("the signer is not the first container: the kubelet starts it after the body's")
	}
	inImage := BuildJob(testJobInput(func(s *toolgatev1alpha1.ToolSpec) { s.Body.RunnerInImage = true }), DefaultOptions())
	pod = inImage.Spec.Template.Spec
	if len(pod.InitContainers) != 0 {
		t.Fatal("runnerInImage must not add an init container")
	}
	if toolIn(pod).Command[0] != podcontract.ImageRunner {
		t.Errorf("runner path = %s", toolIn(pod).Command[0])
	}
}

// The body's container gets the Tool's own environment and nothing of toolgate's; the
// signer gets the frozen arguments, the digest, the bounds and the attempt's key.
func TestBuildJobEnvCarriesFrozenArgumentsNotHostConfig(t *testing.T) {
	pod := BuildJob(testJobInput(nil), DefaultOptions()).Spec.Template.Spec
	if d := diff(envMap(toolIn(pod).Env), map[string]string{"MODE": "fast"}); d != "" {
		t.Errorf("body env (-got +want):\n%s", d)
	}
	want := map[string]string{
		podcontract.EnvArgs: `{"text":"hi"}`, podcontract.EnvArgsDigest: "sha256:abc",
		podcontract.EnvArgsFile: podcontract.ArgsFile, podcontract.EnvMaxOutput: "1048576", podcontract.EnvAttemptKey: "", podcontract.EnvDeadlineMs: "90000",
	}
	if d := diff(envMap(signerIn(pod).Env), want); d != "" {
		t.Errorf("signer env (-got +want):\n%s", d)
	}
}

// No key is ever in a Job (anyone who may get Jobs or Pods would read it there), and no Pod
// holds the namespace's master: the signer references its attempt's own key Secret, which
// the kubelet resolves; the body's container references no key at all.
func TestBuildJobReferencesOnlyTheAttemptKey(t *testing.T) {
	pod := BuildJob(testJobInput(nil), DefaultOptions()).Spec.Template.Spec
	want := corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: podcontract.AttemptKeySecret("hello-1")},
		Key: podcontract.FrameKeySecretKey}
	wantSecretRef(t, signerIn(pod).Env, podcontract.EnvAttemptKey, want)
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == podcontract.FrameKeySecret {
				t.Errorf("container %s references the namespace's master Secret (%s)", c.Name, e.Name)
			}
			if c.Name == podcontract.ToolContainerName && (e.Name == podcontract.EnvAttemptKey || e.Name == podcontract.EnvArgs) {
				t.Errorf("the body's container gets %s", e.Name)
			}
		}
	}
}

// wantSecretRef checks that env carries name by secretKeyRef sel only, with no value.
func wantSecretRef(t *testing.T, env []corev1.EnvVar, name string, sel corev1.SecretKeySelector) {
	t.Helper()
	for _, e := range env {
		if e.Name != name {
			continue
		}
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Fatalf("%s is not a reference to a Secret: %+v", e.Name, e)
		}
		if d := diff(*e.ValueFrom.SecretKeyRef, sel); d != "" {
			t.Errorf("%s references (-got +want):\n%s", e.Name, d)
		}
		return
	}
	t.Errorf("no %s in the environment", name)
}

// scratchVolumes are the Pod's volumes but the link volume.
func scratchVolumes(spec corev1.PodSpec) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range spec.Volumes {
		if v.Name != podcontract.LinkVolume {
			out = append(out, v)
		}
	}
	return out
}

// envMap is env's values by name (the last of a name).
func envMap(env []corev1.EnvVar) map[string]string {
	out := map[string]string{}
	for _, e := range env {
		out[e.Name] = e.Value
	}
	return out
}

// toolIn and signerIn are a Pod spec's body and signer containers.
func toolIn(spec corev1.PodSpec) corev1.Container   { return *toolContainerOf(&spec) }
func signerIn(spec corev1.PodSpec) corev1.Container { return *signerOf(&spec) }

func scratchNone(s *toolgatev1alpha1.ToolSpec) {
	s.Body.RunnerInImage = true
	s.Sandbox.Scratch = toolgatev1alpha1.ScratchNone
}

func TestBuildJobScratch(t *testing.T) {
	pod := BuildJob(testJobInput(func(s *toolgatev1alpha1.ToolSpec) { s.Body.RunnerInImage = true }),
		DefaultOptions()).Spec.Template.Spec
	if len(scratchVolumes(pod)) != 2 || len(toolIn(pod).VolumeMounts) != 3 {
		t.Fatalf("default scratch: volumes %+v mounts %+v", pod.Volumes, toolIn(pod).VolumeMounts)
	}
	// Scratch None: no volume at all (the halves meet at the abstract socket) ...
	pod = BuildJob(testJobInput(scratchNone), DefaultOptions()).Spec.Template.Spec
	if len(pod.Volumes) != 0 || len(toolIn(pod).VolumeMounts) != 0 || len(signerIn(pod).VolumeMounts) != 0 {
		t.Fatalf("scratch None: volumes %+v mounts %+v", pod.Volumes, toolIn(pod).VolumeMounts)
	}
	// ... but under a RuntimeClass, whose containers may not share the network namespace,
	// the link volume only: both containers, a socket's worth of room.
	opts := DefaultOptions()
	opts.DefaultRuntimeClassName = "gvisor"
	pod = BuildJob(testJobInput(scratchNone), opts).Spec.Template.Spec
	for _, c := range pod.Containers {
		if d := diff(c.VolumeMounts, []corev1.VolumeMount{linkMount()}); d != "" {
			t.Errorf("container %s mounts (-got +want):\n%s", c.Name, d)
		}
	}
	if d := diff(pod.Volumes, []corev1.Volume{linkVolume()}); d != "" {
		t.Errorf("scratch None under a RuntimeClass: volumes (-got +want):\n%s", d)
	}
	if sc := toolIn(pod).SecurityContext; sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("scratch None must keep the root filesystem read-only")
	}
	for _, e := range signerIn(pod).Env {
		if e.Name == podcontract.EnvArgsFile && e.Value != podcontract.NoArgsFile {
			t.Errorf("%s = %q, want %q", podcontract.EnvArgsFile, e.Value, podcontract.NoArgsFile)
		}
	}
}

func TestBuildJobRuntimeClassAndEgress(t *testing.T) {
	job := BuildJob(testJobInput(func(s *toolgatev1alpha1.ToolSpec) {
		s.Sandbox.RuntimeClassName = ptr.To("gvisor")
		s.Sandbox.Network = toolgatev1alpha1.NetworkEgress
	}), DefaultOptions())
	if rc := job.Spec.Template.Spec.RuntimeClassName; rc == nil || *rc != "gvisor" {
		t.Errorf("runtimeClassName = %v", rc)
	}
	if job.Labels[podcontract.LabelNetwork] != podcontract.NetworkEgress {
		t.Errorf("network label = %q", job.Labels[podcontract.LabelNetwork])
	}
}

func diff(a, b any) string { return cmp.Diff(a, b) }

func TestBuildJobPassesPodSecurityRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	level := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
	for name, in := range map[string]Input{
		"init-container":  testJobInput(nil),
		"runner-in-image": testJobInput(func(s *toolgatev1alpha1.ToolSpec) { s.Body.RunnerInImage = true }),
		"scratch-none":    testJobInput(scratchNone),
		"credentials":     testJobInput(withCredentials),
	} {
		job := BuildJob(in, DefaultOptions())
		results := evaluator.EvaluatePod(level, &job.Spec.Template.ObjectMeta, &job.Spec.Template.Spec)
		for _, r := range results {
			if !r.Allowed {
				t.Errorf("%s: restricted profile forbids: %s: %s", name, r.ForbiddenReason, r.ForbiddenDetail)
			}
		}
	}
}

// The kubelet expands $(NAME) and $$ in env values; toolgate's values are escaped so that
// they arrive as written, while the Tool's own env keeps Kubernetes' syntax.
func TestBuildJobEnvEscapesDollarsInToolgateValues(t *testing.T) {
	in := testJobInput(func(s *toolgatev1alpha1.ToolSpec) {
		s.Body.Env = []toolgatev1alpha1.EnvVar{{Name: "GREETING", Value: "$(MODE) $$"}}
	})
	in.Arguments = []byte(`{"cmd":"echo $$ $(HOME) $$(X)"}`)
	env := map[string]string{}
	spec := BuildJob(in, DefaultOptions()).Spec.Template.Spec
	for _, e := range append(signerIn(spec).Env, toolIn(spec).Env...) {
		env[e.Name] = e.Value
	}
	if got, want := env[podcontract.EnvArgs], `{"cmd":"echo $$$$ $$(HOME) $$$$(X)"}`; got != want {
		t.Errorf("%s = %s, want %s", podcontract.EnvArgs, got, want)
	}
	if got := env["GREETING"]; got != "$(MODE) $$" {
		t.Errorf("the Tool's env is the operator's, as written: got %q", got)
	}
}

// The operator's default RuntimeClass applies to a Tool that names none, never over one it names.
func TestBuildJobDefaultRuntimeClass(t *testing.T) {
	opts := DefaultOptions()
	opts.DefaultRuntimeClassName = "gvisor"
	tests := []struct {
		name string
		tool *string
		want string
	}{
		{"default applies", nil, "gvisor"},
		{"the tool's own wins", ptr.To("kata"), "kata"},
		{"empty counts as unset", ptr.To(""), "gvisor"},
	}
	for _, tc := range tests {
		job := BuildJob(testJobInput(func(s *toolgatev1alpha1.ToolSpec) { s.Sandbox.RuntimeClassName = tc.tool }), opts)
		if rc := job.Spec.Template.Spec.RuntimeClassName; rc == nil || *rc != tc.want {
			t.Errorf("%s: runtimeClassName = %v, want %q", tc.name, rc, tc.want)
		}
	}
	if rc := BuildJob(testJobInput(func(*toolgatev1alpha1.ToolSpec) {}), DefaultOptions()).Spec.Template.Spec.RuntimeClassName; rc != nil {
		t.Errorf("no default, no tool's: runtimeClassName = %q, want unset (the node's runtime)", *rc)
	}
}

// The start allowance is added to the Job's and the Pod's activeDeadlineSeconds (whole
// seconds, rounded up; none when zero), never to the deadline the runner enforces from the
// body's start, which stays the tool's timeout.
func TestBuildJobAddsTheStartAllowanceOnlyToThePodsDeadline(t *testing.T) {
	for _, tc := range []struct {
		allowance time.Duration
		want      int64
	}{{0, 90}, {1500 * time.Millisecond, 92}, {30 * time.Second, 120}, {-time.Second, 90}} {
		opts := DefaultOptions()
		opts.StartAllowance = tc.allowance
		job := BuildJob(testJobInput(nil), opts)
		pod := job.Spec.Template.Spec
		if *job.Spec.ActiveDeadlineSeconds != tc.want || *pod.ActiveDeadlineSeconds != tc.want {
			t.Errorf("allowance %v: Job deadline %d, Pod deadline %d; want %d", tc.allowance, *job.Spec.ActiveDeadlineSeconds, *pod.ActiveDeadlineSeconds, tc.want)
		}
		if got := envMap(signerIn(pod).Env)[podcontract.EnvDeadlineMs]; got != "90000" {
			t.Errorf("allowance %v: the runner's deadline %q, want the tool's timeout, 90000 ms", tc.allowance, got)
		}
	}
}
