package controllers

import (
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/catalog"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// secretFileMode is the mode of a secret file: read-only, for the Pod's fsGroup (the
// runner's and the body's group) and root.
const secretFileMode int32 = 0o440

// bodyEnvVar is one body.env entry in the Pod API: a literal (kept as written, with the
// kubelet's $(VAR) expansion) or a Secret key the kubelet resolves. A missing Secret or key
// is not optional: the kubelet refuses to create the container (CreateContainerConfigError),
// which ends the attempt at once (credentialMissing).
func bodyEnvVar(e toolgatev1alpha1.EnvVar) corev1.EnvVar {
	if e.ValueFrom == nil {
		return corev1.EnvVar{Name: e.Name, Value: e.Value}
	}
	return corev1.EnvVar{Name: e.Name, ValueFrom: secretKeyRef(e.ValueFrom.SecretKeyRef)}
}

func secretKeyRef(ref toolgatev1alpha1.CredentialKeySelector) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key}}
}

// hasCredentials is true when the body is given any Secret key.
func hasCredentials(body toolgatev1alpha1.ToolBody) bool {
	return len(catalog.Credentials(body)) > 0
}

// credentialEnv gives the signer the values to redact, which the body's container holds
// for the body: each of the body's credential variables, by the same reference, their
// names, the names of its secret files, and each file's value as TOOLGATE_SECRET_FILE_<i>
// (a required reference: a missing Secret or key stops the signer's creation, where the
// projected volume's optional source would not). None for a body without credentials. The
// credentials are the ones policies see (tool.credentials).
func credentialEnv(body toolgatev1alpha1.ToolBody) []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, e := range body.Env {
		if e.ValueFrom != nil {
			env = append(env, bodyEnvVar(e))
		}
	}
	var vars, files []string
	for _, c := range catalog.Credentials(body) {
		if c.As == catalog.CredentialAsEnv {
			vars = append(vars, c.Name)
			continue
		}
		ref := toolgatev1alpha1.CredentialKeySelector{Name: c.Secret, Key: c.Key}
		env = append(env, corev1.EnvVar{Name: podcontract.EnvSecretFilePrefix + strconv.Itoa(len(files)), ValueFrom: secretKeyRef(ref)})
		files = append(files, c.Name)
	}
	if len(vars) > 0 {
		env = append(env, literalEnv(podcontract.EnvSecretEnv, strings.Join(vars, ",")))
	}
	if len(files) > 0 {
		env = append(env, literalEnv(podcontract.EnvSecretFiles, strings.Join(files, ",")))
	}
	return env
}

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

// credentialMissingMessage matches the kubelet's CreateContainerConfigError messages for
// a required Secret key reference: `secret "x" not found` (the API error, "secrets" in
// newer kubelets) and `couldn't find key k in Secret ns/x`.
var credentialMissingMessage = regexp.MustCompile(`^secrets? "[^"]*" not found|^couldn't find key .* in Secret `)

// credentialMissing is true when the kubelet refuses to create a container because a
// Secret or key it references does not exist: waiting will not fix it (the platform has to
// create the Secret), so the attempt ends now rather than at its deadline.
func credentialMissing(cs *corev1.ContainerStatus) bool {
	if cs == nil || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CreateContainerConfigError" {
		return false
	}
	return credentialMissingMessage.MatchString(cs.State.Waiting.Message)
}
