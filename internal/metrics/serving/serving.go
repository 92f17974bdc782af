// Package serving configures the operator's metrics endpoint as current kubebuilder
// scaffolding does: HTTPS (a self-signed certificate unless one is given), and every request
// authenticated with a TokenReview and authorised with a SubjectAccessReview (verb get on the
// non-resource URL /metrics) against the API server, as controller-runtime's
// filters.WithAuthenticationAndAuthorization does, but answering a refused token 401 (that
// filter answers it 500; filter.go). The operator's identity needs create on
// tokenreviews and subjectaccessreviews (config/rbac/metrics_auth_role.yaml); a scraper needs
// get on /metrics (config/rbac/metrics_reader_role.yaml).
//
// It is its own package so that the controllers and the test kit do not pull in
// k8s.io/apiserver, which the filter needs.
package serving

import (
	"crypto/tls"

	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options are the metrics server options for bindAddress ("0" disables the endpoint).
// secure serves HTTPS with authentication and authorisation; without it the endpoint is plain
// HTTP and open to anyone who reaches it. HTTP/2 is off unless enableHTTP2 (the HTTP/2 Rapid
// Reset and Stream Cancellation CVEs), as kubebuilder scaffolds it. certDir, when set, holds
// tls.crt and tls.key (watched for rotation).
func Options(bindAddress string, secure, enableHTTP2 bool, certDir string) metricsserver.Options {
	o := metricsserver.Options{BindAddress: bindAddress, SecureServing: secure, CertDir: certDir}
	if !enableHTTP2 {
		o.TLSOpts = append(o.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	if secure {
		o.FilterProvider = withAuthenticationAndAuthorization
	}
	return o
}
