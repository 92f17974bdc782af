package netisolation

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// SessionIngressPolicyName lets the operator reach session sandbox Pods' signers.
const SessionIngressPolicyName = "toolgate-session-ingress"

// SessionIngressPolicy is the policy that lets the operator's Pods (operatorLabels in
// namespace operatorNS; any namespace when empty) reach the signer of every session Pod
// of namespace ns on podcontract.SessionPort, TCP, and nothing else. The signer accepts
// only a mutual-TLS client with the operator's certificate there; the body cannot bind
// that port (the signer holds it).
func SessionIngressPolicy(ns, operatorNS string, operatorLabels map[string]string) *networkingv1.NetworkPolicy {
	peer := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: operatorLabels},
		NamespaceSelector: &metav1.LabelSelector{}}
	if operatorNS != "" {
		peer.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: operatorNS}}
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: SessionIngressPolicyName, Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: podcontract.LabelManagedBy, Operator: metav1.LabelSelectorOpIn, Values: []string{podcontract.ManagedByValue}},
				{Key: podcontract.LabelSessionPod, Operator: metav1.LabelSelectorOpExists},
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{peer},
				Ports: []networkingv1.NetworkPolicyPort{sessionPort()},
			}},
		},
	}
}

func sessionPort() networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(podcontract.SessionPort))}
}

// sessionPortOnly: every ingress rule of p allows TCP podcontract.SessionPort only — the
// session signer's listener, which admits the operator's mutual-TLS client alone. Such a
// policy does not open a session Pod's body to anyone.
func sessionPortOnly(p *networkingv1.NetworkPolicy) bool {
	want := sessionPort()
	for _, r := range p.Spec.Ingress {
		if len(r.Ports) == 0 {
			return false
		}
		for _, port := range r.Ports {
			proto := corev1.ProtocolTCP
			if port.Protocol != nil {
				proto = *port.Protocol
			}
			if proto != corev1.ProtocolTCP || port.Port == nil || *port.Port != *want.Port || port.EndPort != nil {
				return false
			}
		}
	}
	return true
}
