package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

func TestLoadCA(t *testing.T) {
	ca, other := newTestCA(t, "toolgate egress CA"), newTestCA(t, "other")
	leaf := ca.serving(t, "api.test")
	leafPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Certificate[0]})
	kder, _ := x509.MarshalECPrivateKey(leaf.PrivateKey.(*ecdsa.PrivateKey))
	leafKey := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	for _, tc := range []struct {
		name          string
		cert, key     []byte
		now           time.Time
		want          string
		wantNoFailure bool
	}{
		{"the CA", ca.certPEM, ca.keyPEM, time.Now(), "", true},
		{"another CA's key", ca.certPEM, other.keyPEM, time.Now(), "private key does not match", false},
		{"not a CA", leafPEM, leafKey, time.Now(), "not a CA", false},
		{"expired", ca.certPEM, ca.keyPEM, time.Now().Add(2 * time.Hour), "not now", false},
		{"no PEM", []byte("x"), ca.keyPEM, time.Now(), "egress CA:", false},
	} {
		_, err := LoadCA(tc.cert, tc.key, func() time.Time { return tc.now })
		if tc.wantNoFailure != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A leaf names its host, chains to the CA, is short-lived and cached until half of it is
// used.
func TestCALeaf(t *testing.T) {
	tca := newTestCA(t, "toolgate egress CA")
	now := time.Now()
	ca, err := LoadCA(tca.certPEM, tca.keyPEM, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	l, err := ca.leaf("api.test")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(tca.cert)
	if _, err := l.Leaf.Verify(x509.VerifyOptions{DNSName: "api.test", Roots: roots, CurrentTime: now}); err != nil {
		t.Errorf("leaf does not verify for api.test: %v", err)
	}
	if _, ok := l.Leaf.PublicKey.(*ecdsa.PublicKey); !ok || l.Leaf.PublicKey.(*ecdsa.PublicKey).Curve != elliptic.P256() {
		t.Errorf("leaf key %T, want ECDSA P-256", l.Leaf.PublicKey)
	}
	// The test CA ends in an hour: the leaf does not outlive it.
	if !l.Leaf.NotAfter.Equal(tca.cert.NotAfter) {
		t.Errorf("leaf valid until %s, the CA until %s", l.Leaf.NotAfter, tca.cert.NotAfter)
	}
	if again, _ := ca.leaf("api.test"); again != l {
		t.Error("a second leaf for the same host was minted, want the cached one")
	}
	if other, _ := ca.leaf("other.test"); other == l {
		t.Error("other.test got api.test's leaf")
	}
	now = l.Leaf.NotAfter.Add(-time.Minute)
	if renewed, _ := ca.leaf("api.test"); renewed == l {
		t.Error("a leaf about to expire was served from the cache")
	}
}
