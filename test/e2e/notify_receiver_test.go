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
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/pkg/approvalevents"
)

// sinkRequest is one request the receiver got, as it came, and what its verification said.
type sinkRequest struct {
	header http.Header
	body   []byte
	event  *approvalevents.Notification
	err    error
}

// sinkReceiver is a real HTTPS server on this machine's node address, standing for a chat
// bot: it verifies every request with the shipped approvalevents.Verifier and answers 202,
// or 401 when it does not verify, and records each.
type sinkReceiver struct {
	*httptest.Server
	verifier approvalevents.Verifier

	mu  sync.Mutex
	got []sinkRequest
}

// startSinkReceiver serves HTTPS on nodeIP:0 with a certificate for nodeIP signed by the
// local sink CA (which the operator trusts: make up's approvalNotifications.caBundle).
func startSinkReceiver(nodeIP string, key []byte, dnsNames ...string) *sinkReceiver {
	GinkgoHelper()
	r := &sinkReceiver{verifier: approvalevents.Verifier{Keys: [][]byte{key}}}
	l, err := net.Listen("tcp", net.JoinHostPort(nodeIP, "0"))
	Expect(err).NotTo(HaveOccurred())
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	Expect(r.Listener.Close()).To(Succeed())
	r.Listener = l
	r.TLS = &tls.Config{Certificates: []tls.Certificate{sinkServingCert(nodeIP, dnsNames...)}, MinVersion: tls.VersionTLS12}
	r.StartTLS()
	DeferCleanup(r.Close)
	return r
}

func (r *sinkReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, approvalevents.DefaultMaxBodyBytes))
	got := sinkRequest{header: req.Header.Clone(), body: body, err: err}
	if err == nil {
		got.event, got.err = r.verify(got)
	}
	r.mu.Lock()
	r.got = append(r.got, got)
	r.mu.Unlock()
	if got.err != nil {
		http.Error(w, "does not verify", http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// verify checks a recorded request as a receiver does: signature over the raw body, the
// timestamp window, then the CloudEvent.
func (r *sinkReceiver) verify(got sinkRequest) (*approvalevents.Notification, error) {
	return verifySinkRequest(r.verifier, got)
}

func verifySinkRequest(v approvalevents.Verifier, got sinkRequest) (*approvalevents.Notification, error) {
	hr, err := http.NewRequest(http.MethodPost, "/", bytes.NewReader(got.body))
	if err != nil {
		return nil, err
	}
	hr.Header = got.header
	return v.Request(hr)
}

// requests returns what the receiver got so far.
func (r *sinkReceiver) requests() []sinkRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sinkRequest(nil), r.got...)
}

// eventsFor returns the verified requests of call ns/name of type eventType; any request
// that did not verify fails the check.
func (r *sinkReceiver) eventsFor(g Gomega, subject, eventType string) []sinkRequest {
	var out []sinkRequest
	for _, got := range r.requests() {
		g.Expect(got.err).NotTo(HaveOccurred(), "a request to the sink does not verify: %s", got.body)
		if got.event.Event.Subject() == subject && got.event.Event.Type() == eventType {
			out = append(out, got)
		}
	}
	return out
}

// sinkCAFiles are the local sink CA's certificate and key: $TOOLGATE_SINK_CA and
// $TOOLGATE_SINK_CA_KEY, or .cluster/pki/sink-ca.{crt,key} (hack/cluster/pki.sh).
func sinkCAFiles() (crt, key string) { return localCAFiles("TOOLGATE_SINK_CA", "sink-ca") }

// sinkServingCert mints a short-lived serving certificate for ip (and dnsNames), signed by
// the sink CA.
func sinkServingCert(ip string, dnsNames ...string) tls.Certificate {
	GinkgoHelper()
	crtFile, keyFile := sinkCAFiles()
	return servingCertFrom(crtFile, keyFile, "the local sink CA (make up creates it, hack/cluster/pki.sh)",
		&x509.Certificate{Subject: pkix.Name{CommonName: "toolgate e2e approval sink"},
			IPAddresses: []net.IP{net.ParseIP(ip)}, DNSNames: dnsNames})
}

// localCAFiles are a local CA's certificate and key: $<env> and $<env>_KEY, or
// .cluster/pki/<name>.{crt,key}.
func localCAFiles(env, name string) (crt, key string) {
	crt, key = os.Getenv(env), os.Getenv(env+"_KEY")
	if crt == "" {
		crt = filepath.Join(root, ".cluster", "pki", name+".crt")
	}
	if key == "" {
		key = strings.TrimSuffix(crt, ".crt") + ".key"
	}
	return crt, key
}

// servingCertFrom mints a short-lived (30 minutes) serving certificate with tmpl's subject,
// names and addresses, signed by the CA in crtFile and keyFile (what names that CA, for the
// failure message).
func servingCertFrom(crtFile, keyFile, what string, tmpl *x509.Certificate) tls.Certificate {
	GinkgoHelper()
	caCert, caKey, err := loadCA(crtFile, keyFile)
	Expect(err).NotTo(HaveOccurred(), what)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	Expect(err).NotTo(HaveOccurred())
	now := time.Now()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Minute), now.Add(30*time.Minute)
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// loadCA reads a PEM certificate and its private key (openssl's SEC1 "EC PRIVATE KEY", or
// PKCS #8).
func loadCA(crtFile, keyFile string) (*x509.Certificate, any, error) {
	crtPEM, err := os.ReadFile(crtFile)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(crtPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("%s or %s holds no PEM block", crtFile, keyFile)
	}
	crt, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	if k, err := x509.ParseECPrivateKey(kb.Bytes); err == nil {
		return crt, k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, errors.New(keyFile + ": neither a SEC1 EC nor a PKCS #8 private key")
	}
	return crt, k, nil
}

// refusingAddress is nodeIP:port where nothing listens (a listener opened and closed): a
// sink there is down, every connection refused.
func refusingAddress(nodeIP string) string {
	GinkgoHelper()
	l, err := net.Listen("tcp", net.JoinHostPort(nodeIP, "0"))
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	return addr
}
