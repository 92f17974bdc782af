package netisolation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// A session Pod is isolated with toolgate's policies plus the session ingress policy (the
// signer's port, from the operator); any other ingress, or that ingress to a Pod that is
// no session Pod, is a gap.
func TestSessionIngressIsTheOnlyIngressAllowed(t *testing.T) {
	ns := "agents"
	var base []networkingv1.NetworkPolicy
	for _, p := range ToolNetworkPolicies(ns, DefaultEgressExcept()) {
		base = append(base, *p)
	}
	session := *SessionIngressPolicy(ns, "toolgate-system", map[string]string{"app.kubernetes.io/name": "toolgate"})
	wider := *session.DeepCopy()
	wider.Name = "wider"
	wider.Spec.Ingress[0].Ports = append(wider.Spec.Ingress[0].Ports, networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(80))})
	anyPort := *session.DeepCopy()
	anyPort.Name = "any-port"
	anyPort.Spec.Ingress[0].Ports = nil
	sessionPod := map[string]string{podcontract.LabelManagedBy: podcontract.ManagedByValue, podcontract.LabelNetwork: podcontract.NetworkNone, podcontract.LabelSessionPod: "x"}
	jobPod := map[string]string{podcontract.LabelManagedBy: podcontract.ManagedByValue, podcontract.LabelNetwork: podcontract.NetworkNone}
	owned := []string{EgressOnlyPolicyName, SessionIngressPolicyName}
	for _, tc := range []struct {
		name     string
		labels   map[string]string
		policies []networkingv1.NetworkPolicy
		gap      bool
	}{
		{"session Pod, session ingress", sessionPod, append(base, session), false},
		{"session Pod, ingress to another port too", sessionPod, append(base, session, wider), true},
		{"session Pod, ingress to every port", sessionPod, append(base, anyPort), true},
		{"no session Pod: the session policy does not select it", jobPod, append(base, session), false},
		{"no session Pod, ingress to the signer's port", jobPod, append(base, *relabel(anyPort, wider)), true},
	} {
		got := Gap(toolgatev1alpha1.NetworkNone, tc.labels, tc.policies, owned)
		if (got != "") != tc.gap {
			t.Errorf("%s: gap %q, want a gap: %v", tc.name, got, tc.gap)
		}
	}
}

// relabel is p selecting every toolgate Pod, with q's ingress.
func relabel(p, q networkingv1.NetworkPolicy) *networkingv1.NetworkPolicy {
	out := p.DeepCopy()
	out.Name = "all-tool-pods"
	out.Spec.PodSelector = ToolPodSelector(podcontract.NetworkNone)
	out.Spec.Ingress = q.Spec.Ingress
	return out
}
