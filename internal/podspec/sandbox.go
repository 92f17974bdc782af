package podspec

import (
	corev1 "k8s.io/api/core/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// RuntimeClassOf is the RuntimeClass a tool's Pods run under: the Tool's, else the
// operator's default; "" for the node's default runtime.
func (o Options) RuntimeClassOf(sandbox toolgatev1alpha1.Sandbox) string {
	if sandbox.RuntimeClassName != nil && *sandbox.RuntimeClassName != "" {
		return *sandbox.RuntimeClassName
	}
	return o.DefaultRuntimeClassName
}

func (o Options) runtimeClassOf(sandbox toolgatev1alpha1.Sandbox) *string {
	if rc := o.RuntimeClassOf(sandbox); rc != "" {
		return &rc
	}
	return nil
}

// NetworkLabel is podcontract.LabelNetwork's value for a network mode (a warm Pod's; a
// cold Pod's is sandboxNetworkLabel).
func NetworkLabel(mode toolgatev1alpha1.NetworkMode) string {
	if mode == toolgatev1alpha1.NetworkEgress {
		return podcontract.NetworkEgress
	}
	return podcontract.NetworkNone
}

// HasEgressAllow reports whether a tool's body goes out through the egress proxy.
func HasEgressAllow(s toolgatev1alpha1.Sandbox) bool {
	return s.Egress != nil && len(s.Egress.Allow) > 0
}

// sandboxNetworkLabel is a tool Pod's podcontract.LabelNetwork: proxy-only for a tool
// with sandbox.egress (selected by egressgrant.ProxyPolicyName), else its network mode's.
func sandboxNetworkLabel(s toolgatev1alpha1.Sandbox) string {
	if s.Network == toolgatev1alpha1.NetworkEgress && HasEgressAllow(s) {
		return podcontract.NetworkProxy
	}
	return NetworkLabel(s.Network)
}

func hostAliases(a *corev1.HostAlias) []corev1.HostAlias {
	if a == nil {
		return nil
	}
	return []corev1.HostAlias{*a}
}

// HasEgressCredential reports whether the proxy injects a credential for any of the tool's
// egress destinations.
func HasEgressCredential(s toolgatev1alpha1.Sandbox) bool {
	return len(EgressCredentials(s)) > 0
}

// EgressCredentials are the allow entries that carry a credential, in order.
func EgressCredentials(s toolgatev1alpha1.Sandbox) []toolgatev1alpha1.EgressRule {
	if s.Egress == nil {
		return nil
	}
	var out []toolgatev1alpha1.EgressRule
	for _, r := range s.Egress.Allow {
		if r.Credential != nil {
			out = append(out, r)
		}
	}
	return out
}
