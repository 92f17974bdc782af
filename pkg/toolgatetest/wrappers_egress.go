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

// EgressCredential adds host:port to spec.sandbox.egress.allow, as EgressAllow does, with a
// credential the egress proxy adds to the body's requests there: header (empty: the API's
// default, Authorization) = scheme, a space and the value of key in Secret secret (scheme
// empty: the value alone).
func (s ToolSpecSetters[W]) EgressCredential(host string, port int32, secret, key, header, scheme string) W {
	s.EgressAllow(host, port)
	allow := s.spec.Sandbox.Egress.Allow
	allow[len(allow)-1].Credential = &toolgatev1alpha1.EgressCredential{
		SecretKeyRef: toolgatev1alpha1.CredentialKeySelector{Name: secret, Key: key}, Header: header, Scheme: scheme}
	return s.w
}
