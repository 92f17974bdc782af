package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// systemRoots are where images keep their root certificates, in Go's order
// (crypto/x509's certFiles on Linux): the first that exists is the bundle's base.
var systemRoots = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// maxRootsBytes bounds the roots file read into the bundle (Debian's is about 220 KiB; the
// link volume holds 1 MiB).
const maxRootsBytes = 768 << 10

// egressTrust makes the tool trust the egress CA when the operator gave one
// (podcontract.EnvEgressCA): it writes bundle = the image's roots (the file the Tool's own
// SSL_CERT_FILE names, else the first of systemRoots that exists; none: the CA alone) and
// the CA, and returns the variables that point the tool's clients at it: SSL_CERT_FILE
// always (the bundle holds the roots it named), each other of podcontract.EgressTrustEnv
// only when the environment has no value of its own. Nothing without a CA.
func egressTrust(environ []string, bundle string) ([]string, error) {
	env := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	ca, ok := env[podcontract.EnvEgressCA]
	if !ok {
		return nil, nil
	}
	if err := checkCA([]byte(ca)); err != nil {
		return nil, err
	}
	roots, err := imageRoots(env["SSL_CERT_FILE"])
	if err != nil {
		return nil, err
	}
	if len(roots) > 0 && roots[len(roots)-1] != '\n' {
		roots = append(roots, '\n')
	}
	if err := os.WriteFile(bundle, append(roots, ca...), 0o644); err != nil {
		return nil, fmt.Errorf("writing the egress CA bundle: %w", err)
	}
	var out []string
	for _, name := range podcontract.EgressTrustEnv {
		if _, own := env[name]; own && name != "SSL_CERT_FILE" {
			continue
		}
		out = append(out, name+"="+bundle)
	}
	return out, nil
}

// checkCA refuses a CA that is not PEM certificates.
func checkCA(ca []byte) error {
	n := 0
	for rest := ca; ; n++ {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if _, err := x509.ParseCertificate(b.Bytes); b.Type != "CERTIFICATE" || err != nil {
			return fmt.Errorf("%s: a %q block that is no certificate", podcontract.EnvEgressCA, b.Type)
		}
	}
	if n == 0 {
		return fmt.Errorf("%s holds no PEM certificate", podcontract.EnvEgressCA)
	}
	return nil
}

// imageRoots reads the image's root certificates: named, the file the Tool's SSL_CERT_FILE
// names (which must be readable); else the first of systemRoots that exists (none: nil).
func imageRoots(named string) ([]byte, error) {
	if named != "" {
		return readBounded(named)
	}
	for _, p := range systemRoots {
		b, err := readBounded(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		return b, err
	}
	return nil, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRootsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading root certificates %s: %w", path, err)
	}
	if len(b) > maxRootsBytes {
		return nil, fmt.Errorf("root certificates %s: over %d bytes", path, maxRootsBytes)
	}
	return b, nil
}
