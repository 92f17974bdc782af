package sessionexec

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// authority is this operator process's session CA: made in memory at start, never stored.
// It issues the client certificate the operator dials session Pods with and each session
// Pod's server certificate (its name the certificate's only DNS name); the Pods trust its
// certificate as their client CA. A new process (a restart, a new leader) has another CA,
// so it can reach none of the Pods an earlier one started: those are replaced (reaper.go),
// never reused, and their key was never anywhere but in that process and the Pod's Secret.
type authority struct {
	caCert      *x509.Certificate
	caKey       *ecdsa.PrivateKey
	caPEM       []byte
	fingerprint string
	roots       *x509.CertPool

	mu     sync.Mutex
	client *tls.Certificate // renewed when it has less than certRenew left
}

const (
	// certLifetime bounds every leaf certificate the authority issues: twice as long as a
	// session Pod lives (sessionLifetime), so a Pod's certificate outlives the Pod.
	certLifetime = 2 * sessionLifetime
	// certRenew: the operator's client certificate is issued again when it has less left.
	certRenew = sessionLifetime
	// caLifetime is the CA's: it is never stored and goes with its process.
	caLifetime = 10 * 365 * 24 * time.Hour
)

// processAuthority is this process's authority, made once: the session executor and the
// warm pools' session Pods (PoolTLS) share it.
var processAuthority = sync.OnceValues(func() (*authority, error) { return newAuthority(time.Now()) })

// PoolTLS is this process's session CA as the warm pools use it (warmpool.SessionTLS):
// its fingerprint, and the TLS Secret of a session pool Pod.
func PoolTLS() (*PoolIssuer, error) {
	a, err := processAuthority()
	if err != nil {
		return nil, err
	}
	return &PoolIssuer{a: a}, nil
}

// PoolIssuer issues session pool Pods' TLS Secrets from this process's session CA.
type PoolIssuer struct{ a *authority }

// Fingerprint names this process's CA (podcontract.AnnotationSessionCA).
func (p *PoolIssuer) Fingerprint() string { return p.a.fingerprint }

// Secret is the TLS Secret of the session Pod pod, named as the Pod; no owner is set.
func (p *PoolIssuer) Secret(pod *corev1.Pod) (*corev1.Secret, error) {
	return p.a.secret(time.Now(), pod)
}

// secret is the session Pod pod's Secret: its server certificate and key (for its own
// name) and the client CA, this authority's.
func (a *authority) secret(now time.Time, pod *corev1.Pod) (*corev1.Secret, error) {
	cert, key, err := a.issue(now, pod.Name, x509.ExtKeyUsageServerAuth, []string{serverName(pod.Namespace, pod.Name)})
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace,
		Annotations: map[string]string{podcontract.AnnotationSessionCA: a.fingerprint}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{podcontract.SessionTLSCert: cert, podcontract.SessionTLSKey: key, podcontract.SessionClientCA: a.caPEM}}, nil
}

func newAuthority(now time.Time) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "toolgate session CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(caLifetime), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der)
	a := &authority{caCert: ca, caKey: key, fingerprint: hex.EncodeToString(sum[:8]),
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), roots: x509.NewCertPool()}
	a.roots.AddCert(ca)
	if _, err := a.clientCertificate(now); err != nil {
		return nil, err
	}
	return a, nil
}

// clientCertificate is the operator's client certificate, issued again when it has less
// than certRenew left (a process outlives any one certificate).
func (a *authority) clientCertificate(now time.Time) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client != nil && a.client.Leaf != nil && a.client.Leaf.NotAfter.Sub(now) > certRenew {
		return a.client, nil
	}
	certPEM, keyPEM, err := a.issue(now, "toolgate-operator", x509.ExtKeyUsageClientAuth, nil)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	a.client = &pair
	return a.client, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// issue makes a certificate and key (PEM) for cn with one extended usage and DNS names.
func (a *authority) issue(now time.Time, cn string, usage x509.ExtKeyUsage, dns []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certLifetime),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.caCert, &key.PublicKey, a.caKey)
	if err != nil {
		return nil, nil, err
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), nil
}

// serverName is the DNS name of a session Pod's server certificate: the operator dials
// the Pod's address and verifies this name, so a certificate of another session's Pod
// (reached at a reused address) does not pass.
func serverName(namespace, pod string) string {
	return fmt.Sprintf("%s.%s.session.toolgate.dev", pod, namespace)
}

// clientConfig is the TLS configuration the operator dials the Pod namespace/pod with.
func (a *authority) clientConfig(namespace, pod string) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: a.roots, ServerName: serverName(namespace, pod),
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return a.clientCertificate(time.Now())
		}}
}
