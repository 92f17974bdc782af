// Package netisolation makes a tool's sandbox.network real: the NetworkPolicies toolgate
// ensures in a call's namespace (ToolNetworkPolicies) and the check, before a body may
// start, that the namespace's policies isolate its Pod as its tool requires (Enforcer).
// It knows nothing of the egress proxy: its policies are handed in (Enforcer.Extra).
package netisolation

import (
	"fmt"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Mode is what the operator does about the NetworkPolicies that make a tool's
// sandbox.network real (--network-policy).
type Mode string

const (
	// Ensure: before each Job, create (or repair) toolgate's two policies in the
	// call's namespace, then check that the Pod is isolated; refuse the call if not.
	Ensure Mode = "ensure"
	// Require: write nothing (the platform manages policies), but refuse a call
	// whose Pod the namespace's policies do not isolate as its network mode requires.
	Require Mode = "require"
	// Off: neither: sandbox.network is only a label on the Pod.
	Off Mode = "off"
)

// Names of the policies toolgate ensures (and the chart and config/default/networkpolicy render).
const (
	// DenyAllPolicyName lets network=none tool Pods nothing in or out.
	DenyAllPolicyName = "toolgate-tools-deny-all"
	// EgressOnlyPolicyName lets network=egress tool Pods nothing in, and out anything but
	// the excepted ranges.
	EgressOnlyPolicyName = "toolgate-tools-egress-only"
)

// Options configure the tool Pod NetworkPolicies (--network-policy, --egress-except).
type Options struct {
	// Mode is what the operator does about the policies.
	Mode Mode
	// EgressExcept are the CIDRs the egress-only policy never allows: the cluster's Pod,
	// Service and node ranges, link-local and metadata addresses.
	EgressExcept []string
}

// DefaultEgressExcept covers the usual cluster ranges (RFC 1918, CGNAT, IPv6 ULA),
// loopback, and link-local (169.254.0.0/16, fe80::/10: cloud metadata lives there, as does
// fd00:ec2::254 in fc00::/7). A cluster whose nodes, Pods or Services use other addresses
// must add them.
func DefaultEgressExcept() []string {
	return []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10",
		"127.0.0.0/8", "169.254.0.0/16", "fc00::/7", "fe80::/10"}
}

// DefaultOptions: ensure, with DefaultEgressExcept.
func DefaultOptions() Options {
	return Options{Mode: Ensure, EgressExcept: DefaultEgressExcept()}
}

// ParseMode accepts ensure, require or off.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Ensure, Require, Off:
		return m, nil
	}
	return "", fmt.Errorf("network policy mode %q: want ensure, require or off", s)
}

// ParseEgressExcept splits a comma-separated CIDR list and checks each entry: a valid CIDR
// other than a whole address family (an ipBlock's except must lie strictly inside its cidr).
func ParseEgressExcept(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		_, n, err := net.ParseCIDR(f)
		if err != nil {
			return nil, fmt.Errorf("egress except %q: %w", f, err)
		}
		if ones, _ := n.Mask.Size(); ones == 0 {
			return nil, fmt.Errorf("egress except %q: excludes the whole address family (use network None)", f)
		}
		out = append(out, n.String())
	}
	return out, nil
}

// ToolPodSelector selects the tool Pods of one network mode (the value of
// podcontract.LabelNetwork).
func ToolPodSelector(network string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: map[string]string{podcontract.LabelManagedBy: podcontract.ManagedByValue, podcontract.LabelNetwork: network}}
}

// ToolNetworkPolicies are the two policies of a namespace: Pods labelled network=none get
// nothing in or out; network=egress get nothing in, and out anything but except (and the
// cluster DNS, port 53 of kube-system's k8s-app=kube-dns Pods, so that names resolve).
// except must have passed ParseEgressExcept.
func ToolNetworkPolicies(ns string, except []string) []*networkingv1.NetworkPolicy {
	var v4, v6 []string
	for _, c := range except {
		if strings.Contains(c, ":") {
			v6 = append(v6, c)
		} else {
			v4 = append(v4, c)
		}
	}
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	deny := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: DenyAllPolicyName, Namespace: ns},
		Spec:       networkingv1.NetworkPolicySpec{PodSelector: ToolPodSelector(podcontract.NetworkNone), PolicyTypes: both},
	}
	dnsPort := func(p corev1.Protocol) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: ptr.To(p), Port: ptr.To(intstr.FromInt32(53))}
	}
	egress := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: EgressOnlyPolicyName, Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: ToolPodSelector(podcontract.NetworkEgress),
			PolicyTypes: both,
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{
					{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: v4}},
					{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: v6}},
				}},
				{
					To: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "kube-system"}},
						PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
					}},
					Ports: []networkingv1.NetworkPolicyPort{dnsPort(corev1.ProtocolUDP), dnsPort(corev1.ProtocolTCP)},
				},
			},
		},
	}
	return []*networkingv1.NetworkPolicy{deny, egress}
}

// Gap says why the namespace's policies do not isolate a Pod with these labels as
// network mode requires; "" when they do. Policies select a Pod additively: a Pod is
// isolated for a direction when any policy selecting it has that policy type, and then
// allowed exactly the union of those policies' rules. network None needs both directions
// isolated and no rule at all; Egress needs both isolated and no ingress rule — but for a
// session Pod, ingress to its signer's port alone (sessionPortOnly). With
// ownedEgress non-nil (ensure mode) every egress rule must also come from one of those
// policies, toolgate's own; nil (require mode) lets the platform's policies add egress.
func Gap(network toolgatev1alpha1.NetworkMode, podLabels map[string]string, policies []networkingv1.NetworkPolicy, ownedEgress []string) string {
	var ingressIsolated, egressIsolated bool
	var ingressFrom, egressFrom []string
	set := labels.Set(podLabels)
	for i := range policies {
		p := &policies[i]
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil || !sel.Matches(set) {
			continue
		}
		types := p.Spec.PolicyTypes
		if len(types) == 0 { // the API server's default
			types = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
			if len(p.Spec.Egress) > 0 {
				types = append(types, networkingv1.PolicyTypeEgress)
			}
		}
		ingressIsolated = ingressIsolated || slices.Contains(types, networkingv1.PolicyTypeIngress)
		egressIsolated = egressIsolated || slices.Contains(types, networkingv1.PolicyTypeEgress)
		if len(p.Spec.Ingress) > 0 && (set[podcontract.LabelSessionPod] == "" || !sessionPortOnly(p)) {
			ingressFrom = append(ingressFrom, p.Name)
		}
		if len(p.Spec.Egress) > 0 && (network == toolgatev1alpha1.NetworkNone || ownedEgress != nil && !slices.Contains(ownedEgress, p.Name)) {
			egressFrom = append(egressFrom, p.Name)
		}
	}
	switch {
	case !ingressIsolated || !egressIsolated:
		return fmt.Sprintf("no NetworkPolicy in the namespace isolates %s Pods for ingress and egress", podLabels[podcontract.LabelNetwork])
	case len(ingressFrom) > 0:
		return fmt.Sprintf("NetworkPolicy %s allows ingress to %s Pods", strings.Join(ingressFrom, ", "), podLabels[podcontract.LabelNetwork])
	case len(egressFrom) > 0:
		return fmt.Sprintf("NetworkPolicy %s allows egress from %s Pods", strings.Join(egressFrom, ", "), podLabels[podcontract.LabelNetwork])
	}
	return ""
}
