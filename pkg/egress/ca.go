package egress

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"
)

const (
	// leafValidity is how long a minted leaf certificate is valid at most (never past the
	// CA's own end), and leafBackdate how long before it was minted (clocks a little behind
	// the proxy's); a cached leaf is minted again once half of its validity has passed.
	leafValidity = 24 * time.Hour
	leafBackdate = 5 * time.Minute
	// maxLeaves bounds the leaf cache: hosts come only from grants the operator signed with
	// an injection for them, so a few in practice; past the bound the cache starts again.
	maxLeaves = 1024
)

// CA is the toolgate egress CA: the proxy terminates a tunnel to a host with an injection
// with a leaf certificate for that host, minted from it (ECDSA P-256, leafValidity) and
// cached per host. Tool Pods with an injection trust it; nothing else does.
type CA struct {
	cert   *x509.Certificate
	key    crypto.Signer
	now    func() time.Time
	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// LoadCA reads the CA's certificate and private key (PEM) and checks that they match, that
// the certificate is a CA that may sign certificates, and that it is valid at now().
func LoadCA(certPEM, keyPEM []byte, now func() time.Time) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("egress CA: %w", err)
	}
	cert := pair.Leaf
	if cert == nil {
		if cert, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("egress CA: %w", err)
		}
	}
	if !cert.IsCA || (cert.KeyUsage != 0 && cert.KeyUsage&x509.KeyUsageCertSign == 0) {
		return nil, errors.New("egress CA: the certificate is not a CA that may sign certificates")
	}
	if t := now(); t.Before(cert.NotBefore) || t.After(cert.NotAfter) {
		return nil, fmt.Errorf("egress CA: valid from %s to %s, not now", cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339))
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("egress CA: a %T key cannot sign", pair.PrivateKey)
	}
	return &CA{cert: cert, key: key, now: now, leaves: map[string]*tls.Certificate{}}, nil
}

// leaf returns a certificate for host (a normalised name), minted or from the cache.
func (c *CA) leaf(host string) (*tls.Certificate, error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.leaves[host]; l != nil && now.After(l.Leaf.NotBefore) && now.Before(halfway(l.Leaf)) {
		return l, nil
	}
	l, err := c.mint(host, now)
	if err != nil {
		return nil, err
	}
	if len(c.leaves) >= maxLeaves {
		clear(c.leaves)
	}
	c.leaves[host] = l
	return l, nil
}

// halfway is when half of a certificate's validity has passed.
func halfway(c *x509.Certificate) time.Time { return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) / 2) }

func (c *CA) mint(host string, now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(leafValidity)
	if notAfter.After(c.cert.NotAfter) {
		notAfter = c.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-leafBackdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, fmt.Errorf("egress CA: minting a certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}
