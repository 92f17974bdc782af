// Package credentials is the credentials feature (feature.Credentials): Secret values a
// tool's body gets from the kubelet (body.env[].valueFrom, body.secretFiles). The kubelet
// resolves them when it creates the Pod's containers; what the operator does is read the
// kubelet's refusal of a Secret or key that does not exist as the attempt's end.
package credentials

import (
	"regexp"

	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/controllers/internal/bounds"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// Feature is the credentials feature. Its zero value is ready: it needs nothing.
type Feature struct{}

var (
	_ feature.Feature       = Feature{}
	_ feature.PodClassifier = Feature{}
)

// Name is feature.Credentials.
func (Feature) Name() feature.Name { return feature.Credentials }

// Uses reports whether the tool's body takes a Secret's value.
func (Feature) Uses(spec *v1alpha1.ToolSpec) bool { return len(catalog.Credentials(spec.Body)) > 0 }

// ClassifyPod ends an attempt whose container the kubelet will not create for want of a
// Secret or key: CredentialMissing, at once rather than at its deadline, with the
// kubelet's words for people. Every Pod is read so: a workspace's recorded credentials and
// an egress credential's redaction reach Pods of tools that declare none.
func (Feature) ClassifyPod(pod *corev1.Pod) (reason, detail string, ended bool) {
	missing := missingIn(pod)
	if missing == nil {
		return "", "", false
	}
	return pipeline.TerminationCredentialMissing, bounds.Text("kubelet: "+missing.State.Waiting.Message, bounds.MaxDetail), true
}

// missingMessage matches the kubelet's CreateContainerConfigError messages for
// a required Secret key reference: `secret "x" not found` (the API error, "secrets" in
// newer kubelets) and `couldn't find key k in Secret ns/x`.
var missingMessage = regexp.MustCompile(`^secrets? "[^"]*" not found|^couldn't find key .* in Secret `)

// missing is true when the kubelet refuses to create a container because a
// Secret or key it references does not exist: waiting will not fix it (the platform has to
// create the Secret), so the attempt ends now rather than at its deadline.
func missing(cs *corev1.ContainerStatus) bool {
	if cs == nil || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CreateContainerConfigError" {
		return false
	}
	return missingMessage.MatchString(cs.State.Waiting.Message)
}

// missingIn is the status of a container the kubelet will not create for want of
// a Secret or key (the signer holds the secret files' copies, the body the variables).
func missingIn(pod *corev1.Pod) *corev1.ContainerStatus {
	if pod == nil {
		return nil
	}
	for i := range pod.Status.ContainerStatuses {
		if cs := &pod.Status.ContainerStatuses[i]; missing(cs) {
			return cs
		}
	}
	return nil
}
