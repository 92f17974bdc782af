package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEgressFlags(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte(strings.Repeat("k", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) error {
		fs := flag.NewFlagSet("m", flag.ContinueOnError)
		f := bindEgressProxy(fs)
		if err := fs.Parse(args); err != nil {
			return err
		}
		o, err := f.options()
		if err == nil && f.url != "" && (len(o.Key) != 32 || o.PodLabels["app.kubernetes.io/name"] == "") {
			t.Errorf("options %+v: key or labels not read", o)
		}
		return err
	}
	if err := parse(); err != nil {
		t.Errorf("no proxy: %v", err)
	}
	if err := parse("--egress-proxy-url", "http://10.0.0.50:3128", "--egress-proxy-key-file", key, "--egress-proxy-namespace", "toolgate-system", "--egress-proxy-peer-cidrs", "192.0.2.2/32"); err != nil {
		t.Errorf("ClusterIP proxy: %v", err)
	}
	for _, bad := range [][]string{
		{"--egress-proxy-url", "http://p:3128"}, // no key
		{"--egress-proxy-url", "https://p:3128", "--egress-proxy-key-file", key, "--egress-proxy-namespace", "n"},
		{"--egress-proxy-url", "http://p:3128", "--egress-proxy-key-file", key}, // no namespace
		{"--egress-proxy-url", "http://p:3128", "--egress-proxy-key-file", key, "--egress-proxy-namespace", "n", "--egress-proxy-peer-cidrs", "nope"},
	} {
		if err := parse(bad...); err == nil {
			t.Errorf("flags %q: no error", bad)
		}
	}
}

// testCertPEM is a self-signed certificate, a CA or not, as PEM.
func testCertPEM(t *testing.T, isCA bool) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "toolgate egress CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: isCA, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// --egress-proxy-ca-file is read and checked at start: PEM certificates, one of them a CA.
func TestEgressCAFlag(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("key", []byte(strings.Repeat("k", 32)))
	ca := testCertPEM(t, true)
	options := func(caFile string) ([]byte, error) {
		fs := flag.NewFlagSet("m", flag.ContinueOnError)
		f := bindEgressProxy(fs)
		if err := fs.Parse([]string{"--egress-proxy-url", "http://10.0.0.50:3128", "--egress-proxy-key-file", key,
			"--egress-proxy-namespace", "toolgate-system", "--egress-proxy-ca-file", caFile}); err != nil {
			t.Fatal(err)
		}
		o, err := f.options()
		return o.CA, err
	}
	if got, err := options(write("ca.crt", ca)); err != nil || string(got) != string(ca) {
		t.Errorf("a CA: %v (read %d bytes)", err, len(got))
	}
	for name, data := range map[string][]byte{
		"leaf.crt":    testCertPEM(t, false),
		"garbage.crt": []byte("not PEM"),
		"key.pem":     pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("x")}),
		"tail.crt":    append(append([]byte{}, ca...), "trailing junk"...),
	} {
		if _, err := options(write(name, data)); err == nil || !strings.Contains(err.Error(), "egress proxy CA") {
			t.Errorf("%s: error %v, want one about the egress proxy CA", name, err)
		}
	}
	if _, err := options(filepath.Join(dir, "absent.crt")); err == nil {
		t.Error("an absent CA file: no error")
	}
}
