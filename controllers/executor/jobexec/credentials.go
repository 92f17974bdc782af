package jobexec

import (
	"regexp"

	corev1 "k8s.io/api/core/v1"
)

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
