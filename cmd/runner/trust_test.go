package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// testCAPEM is a self-signed CA certificate as PEM.
func testCAPEM(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "toolgate egress CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

const testRoots = "-----BEGIN CERTIFICATE-----\nroots of the image\n-----END CERTIFICATE-----"

// The bundle is the image's roots and the egress CA; the tool's clients are pointed at it,
// but for a variable the Tool sets itself (SSL_CERT_FILE, whose roots the bundle holds, is
// always replaced).
func TestEgressTrust(t *testing.T) {
	dir := t.TempDir()
	ca := testCAPEM(t)
	own := filepath.Join(dir, "own-roots.pem")
	if err := os.WriteFile(own, []byte(testRoots), 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "bundle.pem")
	env, err := egressTrust([]string{podcontract.EnvEgressCA + "=" + ca, "SSL_CERT_FILE=" + own, "REQUESTS_CA_BUNDLE=/etc/mine.pem"}, bundle)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"SSL_CERT_FILE=" + bundle, "CURL_CA_BUNDLE=" + bundle, "GIT_SSL_CAINFO=" + bundle, "NODE_EXTRA_CA_CERTS=" + bundle}
	if !slices.Equal(env, want) {
		t.Errorf("environment %q, want %q", env, want)
	}
	got, err := os.ReadFile(bundle)
	if err != nil || string(got) != testRoots+"\n"+ca {
		t.Errorf("bundle %q (%v), want the Tool's roots and the CA", got, err)
	}

	// Without SSL_CERT_FILE: the first of the system files that exists.
	saved := systemRoots
	t.Cleanup(func() { systemRoots = saved })
	systemRoots = []string{filepath.Join(dir, "absent.crt"), own}
	if _, err := egressTrust([]string{podcontract.EnvEgressCA + "=" + ca}, bundle); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(bundle); string(got) != testRoots+"\n"+ca {
		t.Errorf("bundle %q, want the system roots and the CA", got)
	}
}

func TestEgressTrustRefusals(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "bundle.pem")
	if env, err := egressTrust([]string{"SSL_CERT_FILE=/x"}, bundle); env != nil || err != nil {
		t.Errorf("no CA: %q, %v; want nothing", env, err)
	}
	if _, err := os.Stat(bundle); !os.IsNotExist(err) {
		t.Errorf("no CA, yet a bundle: %v", err)
	}
	for name, environ := range map[string][]string{
		"a CA that is no PEM":        {podcontract.EnvEgressCA + "=not a certificate"},
		"a CA that is a key":         {podcontract.EnvEgressCA + "=" + string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}}))},
		"an SSL_CERT_FILE not there": {podcontract.EnvEgressCA + "=" + testCAPEM(t), "SSL_CERT_FILE=" + filepath.Join(dir, "absent")},
	} {
		if _, err := egressTrust(environ, bundle); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Split as in a tool Pod: the body side writes the bundle into the link volume (beside the
// signer's socket) and the tool sees the bundle's variables, not the CA's; a token the
// upstream echoed back is redacted by the signer, which alone holds the egress value.
func TestSplitEgressCAAndRedaction(t *testing.T) {
	const token = "ghp_injected-at-the-proxy-42"
	p := newPair(t, `echo "ca=${`+podcontract.EnvEgressCA+`:-none} ssl=$SSL_CERT_FILE"; test -s "$SSL_CERT_FILE" && echo bundle-ok; echo "upstream said: Bearer `+token+`"`)
	p.signer.env[podcontract.EnvRedactEgressPrefix+"0"] = token
	p.body.env[podcontract.EnvEgressCA] = testCAPEM(t)
	o, bodyCode := p.run(nil)
	bundle := filepath.Join(filepath.Dir(p.body.env[podcontract.EnvSignerSocket]), filepath.Base(podcontract.EgressCABundle))
	want := "ca=none ssl=" + bundle + "\nbundle-ok\nupstream said: Bearer " + redactedMark + "\n"
	if o.code != 0 || bodyCode != 0 || o.frame.Stdout != want || o.frame.Redactions != 1 {
		t.Fatalf("signer exit %d, body side exit %d, stdout %q (want %q), redactions %d", o.code, bodyCode, o.frame.Stdout, want, o.frame.Redactions)
	}
	if strings.Contains(string(o.stderr), token) {
		t.Error("the signer's log holds the token")
	}
}
