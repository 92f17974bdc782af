// Package egressgranttest holds the fixtures the tests of egress grants share (those of
// controllers/egressgrant and of the controllers that use it): the proxy's key and address,
// tool specs with sandbox.egress, and the Secret of their credentials. It imports no
// toolgate controller package, so egressgrant's own tests can use it.
package egressgranttest

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
)

// Key is the proxy's key in every test.
var Key = []byte(strings.Repeat("k", 32))

// Token is the value of the credential WithInjection's first destination gets.
const Token = "ghp_0123456789abcdef"

// The proxy of every test: reached at a ClusterIP, its Pods in ProxyNamespace, labelled
// ProxyLabels.
const (
	// ProxyURL is the proxy as tool bodies reach it.
	ProxyURL = "http://10.0.0.50:3128"
	// ProxyNamespace is where the proxy's Pods run.
	ProxyNamespace = "toolgate-system"
)

// ProxyLabels are the labels of the proxy's Pods.
func ProxyLabels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": "toolgate-egress-proxy"}
}

// WithEgress lets the tool reach allowed.test:443 through the proxy.
func WithEgress(spec *toolgatev1alpha1.ToolSpec) {
	spec.Sandbox.Network = toolgatev1alpha1.NetworkEgress
	spec.Sandbox.Egress = &toolgatev1alpha1.Egress{Allow: []toolgatev1alpha1.EgressRule{{Host: "allowed.test", Port: 443}}}
}

// WithInjection gives the tool two destinations whose requests the proxy injects into
// (a Bearer token in Authorization by default; an API key alone in X-Api-Key) and one
// without; the credentials are keys token and key of Secret "api".
func WithInjection(spec *toolgatev1alpha1.ToolSpec) {
	ref := func(key string) toolgatev1alpha1.CredentialKeySelector {
		return toolgatev1alpha1.CredentialKeySelector{Name: "api", Key: key}
	}
	spec.Sandbox.Network = toolgatev1alpha1.NetworkEgress
	spec.Sandbox.Egress = &toolgatev1alpha1.Egress{Allow: []toolgatev1alpha1.EgressRule{
		{Host: "allowed.test", Port: 443, Credential: &toolgatev1alpha1.EgressCredential{SecretKeyRef: ref("token"), Scheme: "Bearer"}},
		{Host: "other.test", Port: 443},
		{Host: "keyed.test", Port: 8443, Credential: &toolgatev1alpha1.EgressCredential{SecretKeyRef: ref("key"), Header: "X-Api-Key"}},
	}}
}

// Secret is Secret "api" of namespace "agents" with data.
func Secret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "api"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}
