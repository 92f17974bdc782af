package egressgrant

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// ProxyPolicyName is the policy that lets Pods of tools with sandbox.egress reach the
// egress proxy and nothing else.
const ProxyPolicyName = "toolgate-tools-egress-proxy"

// ProxyPolicies are the policies a namespace gets for tools with sandbox.egress: the Pods
// proxyOnly selects (the tool Pods labelled proxy-only, as network isolation selects them)
// get nothing in, and out only the proxy's Pods (and PeerCIDRs) on the proxy's port; no DNS
// (the proxy resolves names). None when no proxy is configured.
func ProxyPolicies(ns string, o ProxyOptions, proxyOnly metav1.LabelSelector) []*networkingv1.NetworkPolicy {
	port, err := o.port()
	if o.URL == "" || err != nil {
		return nil
	}
	peers := []networkingv1.NetworkPolicyPeer{{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: o.Namespace}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: o.PodLabels},
	}}
	for _, c := range o.PeerCIDRs {
		peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c}})
	}
	return []*networkingv1.NetworkPolicy{{
		ObjectMeta: metav1.ObjectMeta{Name: ProxyPolicyName, Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: proxyOnly,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    peers,
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(port))}},
			}},
		},
	}}
}
