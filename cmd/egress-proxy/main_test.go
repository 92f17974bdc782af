package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/pkg/egress"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--key-file", "/k", "--deny-cidrs", "10.244.0.0/16, 192.0.2.2/32"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.deny) != len(egress.DefaultDeny())+2 || !egress.Denied(o.deny, netip.MustParseAddr("192.0.2.2")) {
		t.Errorf("deny ranges %v: want the defaults and both extras", o.deny)
	}
	if o.rate != egress.DefaultRatePerSecond || o.burst != egress.DefaultBurst {
		t.Errorf("rate %v, burst %d: want the defaults", o.rate, o.burst)
	}
	for _, args := range [][]string{{}, {"--key-file", "/k", "--deny-cidrs", "10.0.0.0/33"}} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) = nil error", strings.Join(args, " "))
		}
	}
}

func TestParseFlagsRate(t *testing.T) {
	o, err := parseFlags([]string{"--key-file", "/k", "--rate", "2.5", "--burst", "7"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.rate != 2.5 || o.burst != 7 {
		t.Errorf("rate %v, burst %d; want 2.5 and 7", o.rate, o.burst)
	}
	for _, tc := range []struct{ flag, value, want string }{
		{"--rate", "-1", "--rate -1: want a positive number"},
		{"--rate", "0", "--rate 0: want a positive number"},
		{"--rate", "NaN", "--rate NaN: want a positive number"},
		{"--rate", "+Inf", "--rate +Inf: want a positive number"},
		{"--burst", "-3", "--burst -3: want at least 1"},
		{"--burst", "0", "--burst 0: want at least 1"},
		{"--burst", "1.5", "invalid value"},
	} {
		_, err := parseFlags([]string{"--key-file", "/k", tc.flag, tc.value}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: error %v, want %q", tc.flag, tc.value, err, tc.want)
		}
	}
}

func TestParseFlagsInjectionAndBinding(t *testing.T) {
	o, err := parseFlags([]string{"--key-file", "/k"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.bindWait != 10*time.Second || o.caCertFile != "" || o.upstreamCAFile != "" {
		t.Errorf("defaults: bind-wait %s, CA %q, upstream CA %q; want 10s and none", o.bindWait, o.caCertFile, o.upstreamCAFile)
	}
	o, err = parseFlags([]string{"--key-file", "/k", "--ca-cert-file", "/ca/tls.crt", "--ca-key-file", "/ca/tls.key",
		"--upstream-ca-file", "/up/ca.crt", "--bind-wait", "0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.caCertFile != "/ca/tls.crt" || o.caKeyFile != "/ca/tls.key" || o.upstreamCAFile != "/up/ca.crt" || o.bindWait != 0 {
		t.Errorf("options %+v", o)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ca-cert-file", "/ca/tls.crt"}, "go together"},
		{[]string{"--ca-key-file", "/ca/tls.key"}, "go together"},
		{[]string{"--bind-wait", "-1s"}, "--bind-wait -1s: want 0"},
	} {
		_, err := parseFlags(append([]string{"--key-file", "/k"}, tc.args...), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestLoadTLS(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	crt, key := testCA(t)
	o := options{caCertFile: write("tls.crt", crt), caKeyFile: write("tls.key", key), upstreamCAFile: write("up.crt", crt)}
	ca, roots, err := loadTLS(o)
	if err != nil || ca == nil || roots == nil {
		t.Fatalf("loadTLS = %v, %v, %v", ca, roots, err)
	}
	for _, tc := range []struct {
		o    options
		want string
	}{
		{options{upstreamCAFile: write("empty.crt", "no PEM here")}, "no PEM certificate"},
		{options{upstreamCAFile: filepath.Join(dir, "missing")}, "--upstream-ca-file"},
		{options{caCertFile: write("bad.crt", "x"), caKeyFile: o.caKeyFile}, "egress CA"},
	} {
		if _, _, err := loadTLS(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("loadTLS(%+v): %v, want %q", tc.o, err, tc.want)
		}
	}
}

// testCA returns a self-signed CA certificate and its key, PEM.
func testCA(t *testing.T) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}
