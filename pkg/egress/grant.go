package egress

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Grant is what one attempt's body may reach through the proxy: the operator signs it
// with the proxy key and hands it to the body inside its proxy URL; the proxy verifies it
// on every request and records what it saw under the attempt's Key. The body can read its
// own grant but cannot forge another (it never holds the key), so it can neither widen its
// allow list nor have its traffic counted on another call.
type Grant struct {
	Namespace string `json:"ns"`
	Call      string `json:"call"`
	UID       string `json:"uid"`
	Attempt   int32  `json:"attempt"`
	Allow     []Rule `json:"allow"`
	// Expires (Unix seconds) ends the grant: the attempt's deadline plus a margin.
	Expires int64 `json:"exp"`
	// Inject are the headers the proxy adds to the body's requests (credentials the body
	// never holds). They travel inside the grant sealed with a key derived from the proxy
	// key, so the body that carries its grant cannot read them.
	Inject []Injection `json:"-"`
}

// Injection is one header the proxy sets on every request of a tunnel to Host:Port, which
// it terminates with the toolgate egress CA and re-originates to the real host.
type Injection struct {
	Host   string `json:"host"`
	Port   int32  `json:"port"`
	Header string `json:"header"`
	// Value is the header's whole value (a scheme such as "Bearer " included).
	Value string `json:"value"`
}

// Key names an attempt's records: the call's UID and the attempt number.
func (g Grant) Key() string { return AttemptKey(g.UID, g.Attempt) }

// AttemptKey is the key the proxy files an attempt's records under.
func AttemptKey(uid string, attempt int32) string { return fmt.Sprintf("%s/%d", uid, attempt) }

// ProxyUser is the user name of the proxy credential; the password is the signed grant.
const ProxyUser = "call"

// MinKeyBytes is the shortest proxy key the operator and the proxy accept.
const MinKeyBytes = 32

// maxGrantBytes bounds a credential the proxy decodes and Sign makes: a grant of 32 rules of
// 253-byte names is about 12 KiB encoded, one with MaxInjections of MaxInjectionValueBytes
// about 76 KiB; the bound keeps it within one environment variable (128 KiB on Linux).
const maxGrantBytes = 96 << 10

// signedGrant is a grant as it travels: its injections sealed in "inj".
type signedGrant struct {
	Grant
	Sealed string `json:"inj,omitempty"`
}

var enc = base64.RawURLEncoding

// Sign returns the grant as a credential: base64url(JSON) "." base64url(HMAC-SHA256), its
// injections sealed (AES-256-GCM under a key derived from the proxy key) in the JSON.
func Sign(key []byte, g Grant) (string, error) {
	if len(key) < MinKeyBytes {
		return "", fmt.Errorf("proxy key: %d bytes, want at least %d", len(key), MinKeyBytes)
	}
	sealed, err := sealInjections(key, g)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(signedGrant{Grant: g, Sealed: sealed})
	if err != nil {
		return "", err
	}
	payload := enc.EncodeToString(body)
	cred := payload + "." + enc.EncodeToString(mac(key, "grant", payload))
	if len(cred) > maxGrantBytes {
		return "", fmt.Errorf("grant: %d bytes signed, at most %d", len(cred), maxGrantBytes)
	}
	return cred, nil
}

// Verify checks a credential's signature and expiry and returns its grant, its injections
// opened.
func Verify(key []byte, credential string, now time.Time) (Grant, error) {
	var sg signedGrant
	if len(credential) > maxGrantBytes {
		return Grant{}, errors.New("credential too long")
	}
	payload, sig, ok := strings.Cut(credential, ".")
	got, err := enc.DecodeString(sig)
	if !ok || err != nil || !hmac.Equal(got, mac(key, "grant", payload)) {
		return Grant{}, errors.New("credential not signed by the operator")
	}
	body, err := enc.DecodeString(payload)
	if err != nil {
		return Grant{}, errors.New("credential not signed by the operator")
	}
	if err := json.Unmarshal(body, &sg); err != nil {
		return Grant{}, fmt.Errorf("credential: %w", err)
	}
	g := sg.Grant
	if now.Unix() > g.Expires {
		return Grant{}, errors.New("credential expired")
	}
	if sg.Sealed != "" {
		if g.Inject, err = openInjections(key, g, sg.Sealed); err != nil {
			return Grant{}, err
		}
	}
	return g, nil
}

// RecordsToken is the bearer token of the proxy's records endpoint, derived from the key:
// only the operator (which holds the key) reads what the proxy recorded.
func RecordsToken(key []byte) string {
	return enc.EncodeToString(mac(key, "records", ""))
}

// mac keys each use of the proxy key by purpose, so a grant's signature is never a
// records token and the other way round.
func mac(key []byte, purpose, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("toolgate-egress/" + purpose + "\x00" + msg))
	return h.Sum(nil)
}
