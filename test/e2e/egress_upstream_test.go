/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// make up's e2e upstream CA is the one the egress proxy trusts (egressProxy.upstreamCABundle),
// and upstreamTLSListener serves allowed.test with a certificate it signed and records the
// request's headers: the ground the credential-injection specs stand on.
var _ = Describe("egress: the e2e upstream CA", Label("egress"), func() {
	It("signs the allowed.test listener and is what the egress proxy trusts", func(ctx SpecContext) {
		crtFile, _ := upstreamCAFiles()
		crt, err := os.ReadFile(crtFile)
		Expect(err).NotTo(HaveOccurred(), "make up creates the e2e upstream CA")
		var cm corev1.ConfigMap
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: release + "-egress-proxy-upstream-ca"}, &cm)).To(Succeed())
		Expect(strings.TrimSpace(cm.Data["ca.crt"])).To(Equal(strings.TrimSpace(string(crt))))

		nodeIP := nodeAddress()
		port, count, headers := upstreamTLSListener(nodeIP)
		roots := x509.NewCertPool()
		Expect(roots.AppendCertsFromPEM(crt)).To(BeTrue())
		addr := net.JoinHostPort(nodeIP, strconv.Itoa(int(port)))
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}}
		DeferCleanup(tr.CloseIdleConnections)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://allowed.test:"+strconv.Itoa(int(port))+"/", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("X-E2e-Probe", "1")
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		Expect(err).NotTo(HaveOccurred(), "a client trusting only the e2e upstream CA verifies allowed.test")
		Expect(resp.Body.Close()).To(Succeed())
		Expect(count("allowed.test")).To(Equal(1))
		Expect(count("other.test")).To(BeZero())
		Expect(headers("allowed.test")[0].Get("X-E2e-Probe")).To(Equal("1"))
	})
})

// upstreamTLSListener serves HTTPS on the node address, port 443 when it can bind it (else
// any port), with a certificate for allowed.test and other.test signed by the local e2e
// upstream CA (make up creates it, hack/up.sh ensure_egress_upstream_ca, and installs the
// egress proxy trusting it as egressProxy.upstreamCABundle): a real destination the proxy
// re-originates a terminated tunnel to, verifying its certificate. It records every
// request's headers per Host (port aside) and returns the port, the count of requests per
// host and their headers.
func upstreamTLSListener(nodeIP string) (int32, func(host string) int, func(host string) []http.Header) {
	GinkgoHelper()
	l, err := net.Listen("tcp", net.JoinHostPort(nodeIP, "443"))
	if err != nil {
		l, err = net.Listen("tcp", net.JoinHostPort(nodeIP, "0"))
	}
	Expect(err).NotTo(HaveOccurred())
	var mu sync.Mutex
	seen := map[string][]http.Header{}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{upstreamServingCert("allowed.test", "other.test")}, MinVersion: tls.VersionTLS12},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host, _, err := net.SplitHostPort(r.Host)
			if err != nil { // no port in Host: the default port, 443
				host = r.Host
			}
			host = strings.ToLower(host)
			mu.Lock()
			seen[host] = append(seen[host], r.Header.Clone())
			mu.Unlock()
			fmt.Fprint(w, "egress upstream e2e")
		})}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	DeferCleanup(func() { _ = srv.Close() })
	_, portText, _ := net.SplitHostPort(l.Addr().String())
	port, _ := strconv.Atoi(portText)
	headers := func(host string) []http.Header {
		mu.Lock()
		defer mu.Unlock()
		return append([]http.Header(nil), seen[host]...)
	}
	count := func(host string) int { return len(headers(host)) }
	return int32(port), count, headers
}

// upstreamCAFiles are the local e2e upstream CA's certificate and key:
// $TOOLGATE_EGRESS_UPSTREAM_CA and $TOOLGATE_EGRESS_UPSTREAM_CA_KEY, or
// .cluster/pki/egress-upstream-ca.{crt,key}.
func upstreamCAFiles() (crt, key string) {
	return localCAFiles("TOOLGATE_EGRESS_UPSTREAM_CA", "egress-upstream-ca")
}

// upstreamServingCert mints a short-lived serving certificate for dnsNames, signed by the
// e2e upstream CA.
func upstreamServingCert(dnsNames ...string) tls.Certificate {
	GinkgoHelper()
	crtFile, keyFile := upstreamCAFiles()
	return servingCertFrom(crtFile, keyFile, "the local e2e upstream CA (make up creates it, hack/up.sh ensure_egress_upstream_ca)",
		&x509.Certificate{Subject: pkix.Name{CommonName: dnsNames[0]}, DNSNames: dnsNames})
}
