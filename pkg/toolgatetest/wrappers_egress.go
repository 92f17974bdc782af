package toolgatetest

import toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"

// EgressAllow adds host:port to spec.sandbox.egress.allow and sets network Egress, which
// an allow list requires.
func (s ToolSpecSetters[W]) EgressAllow(host string, port int32) W {
	s.spec.Sandbox.Network = toolgatev1alpha1.NetworkEgress
	if s.spec.Sandbox.Egress == nil {
		s.spec.Sandbox.Egress = &toolgatev1alpha1.Egress{}
	}
	s.spec.Sandbox.Egress.Allow = append(s.spec.Sandbox.Egress.Allow, toolgatev1alpha1.EgressRule{Host: host, Port: port})
	return s.w
}
