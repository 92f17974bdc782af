package egress

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// Bounds of Grant.Inject, which Sign and Verify enforce (and the operator can check first):
// at most MaxInjections headers per grant, each value at most MaxInjectionValueBytes (a
// large JWT fits) of visible ASCII, spaces and tabs, each name a header token of at most
// MaxInjectionHeaderBytes. The whole credential stays under maxGrantBytes, so that it fits
// an environment variable (Linux: 128 KiB per string); only values full of '"' or '\\'
// (escaped in JSON) can make Sign refuse a grant within these bounds.
const (
	MaxInjections           = 8
	MaxInjectionValueBytes  = 4096
	MaxInjectionHeaderBytes = 64
)

// injectPurpose derives the key that seals a grant's injections from the proxy key: HKDF, so
// the sealing key is neither the HMAC key of grants nor the records token.
const injectPurpose = "toolgate-egress/inject"

// reservedHeaders frame a request or belong to the proxy's hop: an injection never sets them.
var reservedHeaders = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade",
	"Te", "Trailer", "Expect", "Proxy-Authorization", "Proxy-Authenticate", "Proxy-Connection"}

// ValidateInjection checks one injection as Sign does: Host a normalised DNS name (no
// wildcard), Port 1–65535, Header a header name toolgate may set, Value within the bounds.
func ValidateInjection(inj Injection) error {
	if n, ok := NormalizeHost(inj.Host); !ok || n != inj.Host {
		return fmt.Errorf("injection host %q: want a lowercase DNS name", inj.Host)
	}
	if inj.Port < 1 || inj.Port > 65535 {
		return fmt.Errorf("injection port %d: want 1-65535", inj.Port)
	}
	if inj.Header == "" || len(inj.Header) > MaxInjectionHeaderBytes || !isToken(inj.Header) {
		return fmt.Errorf("injection header name: want a header token of 1-%d bytes", MaxInjectionHeaderBytes)
	}
	if slices.Contains(reservedHeaders, http.CanonicalHeaderKey(inj.Header)) {
		return fmt.Errorf("injection header %s: reserved for the request's framing or the proxy", http.CanonicalHeaderKey(inj.Header))
	}
	v := inj.Value
	if v == "" || len(v) > MaxInjectionValueBytes {
		return fmt.Errorf("injection value for %s: %d bytes, want 1-%d", inj.Header, len(v), MaxInjectionValueBytes)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return fmt.Errorf("injection value for %s: byte %d is not visible ASCII, space or tab", inj.Header, i)
		}
	}
	if v[0] == ' ' || v[0] == '\t' || v[len(v)-1] == ' ' || v[len(v)-1] == '\t' {
		return fmt.Errorf("injection value for %s: leading or trailing blank", inj.Header)
	}
	return nil
}

// validateInjections checks a grant's injections: each valid, at most MaxInjections, one
// value per host, port and header, and each for a host and port the grant allows.
func validateInjections(g Grant) error {
	if len(g.Inject) > MaxInjections {
		return fmt.Errorf("%d injections, at most %d", len(g.Inject), MaxInjections)
	}
	type id struct {
		host   string
		port   int32
		header string
	}
	seen := map[id]bool{}
	for _, inj := range g.Inject {
		if err := ValidateInjection(inj); err != nil {
			return err
		}
		k := id{inj.Host, inj.Port, http.CanonicalHeaderKey(inj.Header)}
		if seen[k] {
			return fmt.Errorf("injection %s for %s:%d: given twice", k.header, k.host, k.port)
		}
		seen[k] = true
		if !Allowed(g.Allow, inj.Host, inj.Port) {
			return fmt.Errorf("injection for %s:%d: the grant does not allow that destination", inj.Host, inj.Port)
		}
	}
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110 tchar).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !tokenChar(s[i]) {
			return false
		}
	}
	return s != ""
}

// sealer is the AEAD (AES-256-GCM, a random nonce per seal) keyed for injections.
func sealer(key []byte) (cipher.AEAD, error) {
	k, err := hkdf.Key(sha256.New, key, nil, injectPurpose, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCMWithRandomNonce(block)
}

// sealAD binds a seal to its attempt (the HMAC over the grant binds it to the rest).
func sealAD(g Grant) []byte { return []byte(injectPurpose + "\x00" + g.Key()) }

// sealInjections encrypts g.Inject for the grant's "inj" field; "" when there are none.
func sealInjections(key []byte, g Grant) (string, error) {
	if len(g.Inject) == 0 {
		return "", nil
	}
	if err := validateInjections(g); err != nil {
		return "", err
	}
	var plain bytes.Buffer
	e := json.NewEncoder(&plain)
	e.SetEscapeHTML(false)
	if err := e.Encode(g.Inject); err != nil {
		return "", err
	}
	aead, err := sealer(key)
	if err != nil {
		return "", err
	}
	return enc.EncodeToString(aead.Seal(nil, nil, plain.Bytes(), sealAD(g))), nil
}

// errSeal is Verify's answer to a seal that does not open or holds invalid injections.
var errSeal = errors.New("credential: the sealed injections do not open")

// openInjections decrypts a grant's "inj" field and checks what it holds.
func openInjections(key []byte, g Grant, sealed string) ([]Injection, error) {
	raw, err := enc.DecodeString(sealed)
	if err != nil {
		return nil, errSeal
	}
	aead, err := sealer(key)
	if err != nil {
		return nil, err
	}
	plain, err := aead.Open(nil, nil, raw, sealAD(g))
	if err != nil {
		return nil, errSeal
	}
	var out []Injection
	if err := json.Unmarshal(plain, &out); err != nil {
		return nil, errSeal
	}
	g.Inject = out
	if err := validateInjections(g); err != nil {
		return nil, fmt.Errorf("credential: %w", err)
	}
	return out, nil
}

// injectionsFor returns the injections of g for host:port (host normalised).
func (g Grant) injectionsFor(host string, port int32) []Injection {
	var out []Injection
	for _, inj := range g.Inject {
		if inj.Host == host && inj.Port == port {
			out = append(out, inj)
		}
	}
	return out
}
