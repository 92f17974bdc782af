package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sealedTestGrant(now time.Time) Grant {
	return Grant{Namespace: "ns", Call: "c", UID: "u1", Attempt: 1, Expires: now.Unix() + 60,
		Allow: []Rule{{"api.test", 443}, {"*.example.test", 8443}},
		Inject: []Injection{{Host: "api.test", Port: 443, Header: "Authorization", Value: "Bearer s3cret-token"},
			{Host: "x.example.test", Port: 8443, Header: "X-Api-Key", Value: "k\"ey\\with quotes"}}}
}

func TestSealRoundTrip(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	g := sealedTestGrant(now)
	cred, err := Sign(testKey, g)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Verify(testKey, cred, now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(g, got); diff != "" {
		t.Errorf("Verify(Sign(g)) differs (-want +got):\n%s", diff)
	}
	// The body holds its credential: the payload is readable, the values are not in it.
	payload, _, _ := strings.Cut(cred, ".")
	body, err := enc.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"s3cret", "Bearer", "X-Api-Key", "quotes"} {
		if bytes.Contains(body, []byte(secret)) {
			t.Errorf("the grant's readable payload holds %q: %s", secret, body)
		}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields["inj"] == nil {
		t.Errorf("payload %s: want a sealed \"inj\" field (%v)", body, err)
	}
	// A fresh nonce per seal: the same grant never seals to the same bytes.
	again, _ := Sign(testKey, g)
	if again == cred {
		t.Error("two seals of one grant are equal: the nonce is not random")
	}
	// A grant without injections carries no "inj" field.
	plain, _ := Sign(testKey, Grant{UID: "u", Expires: now.Unix() + 60})
	p, _, _ := strings.Cut(plain, ".")
	if b, _ := enc.DecodeString(p); bytes.Contains(b, []byte(`"inj"`)) {
		t.Errorf("a grant without injections: %s", b)
	}
}

func TestSealTamper(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	g := sealedTestGrant(now)
	cred, _ := Sign(testKey, g)
	payload, sig, _ := strings.Cut(cred, ".")
	body, _ := enc.DecodeString(payload)
	var orig, sg signedGrant
	if err := json.Unmarshal(body, &orig); err != nil {
		t.Fatal(err)
	}
	sg = orig
	raw, _ := enc.DecodeString(sg.Sealed)
	raw[len(raw)/2] ^= 1
	sg.Sealed = enc.EncodeToString(raw)
	tampered, _ := json.Marshal(sg)
	tp := enc.EncodeToString(tampered)
	// The body cannot sign: the HMAC fails first.
	if _, err := Verify(testKey, tp+"."+sig, now); err == nil || !strings.Contains(err.Error(), "not signed") {
		t.Errorf("a tampered seal under the old signature: %v", err)
	}
	// Even under a valid signature (the key holder's mistake), the seal does not open.
	if _, err := Verify(testKey, tp+"."+enc.EncodeToString(mac(testKey, "grant", tp)), now); !errors.Is(err, errSeal) {
		t.Errorf("a tampered seal, signed: %v, want %v", err, errSeal)
	}
	// A seal moved to another attempt's grant does not open either (bound to the attempt).
	other := g
	other.UID, other.Inject = "u2", nil
	ob, _ := json.Marshal(signedGrant{Grant: other, Sealed: orig.Sealed})
	op := enc.EncodeToString(ob)
	if _, err := Verify(testKey, op+"."+enc.EncodeToString(mac(testKey, "grant", op)), now); !errors.Is(err, errSeal) {
		t.Errorf("a seal moved to another attempt: %v, want %v", err, errSeal)
	}
}

func TestSignRefusesInjections(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	base := func(inj ...Injection) Grant {
		return Grant{UID: "u", Expires: now.Unix() + 60, Allow: []Rule{{"api.test", 443}}, Inject: inj}
	}
	ok := Injection{Host: "api.test", Port: 443, Header: "Authorization", Value: "Bearer t"}
	with := func(f func(*Injection)) Injection { i := ok; f(&i); return i }
	many := make([]Injection, MaxInjections+1)
	for i := range many {
		many[i] = with(func(j *Injection) { j.Header = "X-H" + strings.Repeat("a", i) })
	}
	for _, tc := range []struct {
		name string
		g    Grant
		want string
	}{
		{"uppercase host", base(with(func(i *Injection) { i.Host = "API.test" })), "want a lowercase DNS name"},
		{"wildcard host", base(with(func(i *Injection) { i.Host = "*.test" })), "want a lowercase DNS name"},
		{"port", base(with(func(i *Injection) { i.Port = 0 })), "want 1-65535"},
		{"header not a token", base(with(func(i *Injection) { i.Header = "X Key" })), "header token"},
		{"header too long", base(with(func(i *Injection) { i.Header = strings.Repeat("h", MaxInjectionHeaderBytes+1) })), "header token"},
		{"framing header", base(with(func(i *Injection) { i.Header = "content-length" })), "Content-Length: reserved"},
		{"proxy header", base(with(func(i *Injection) { i.Header = "Proxy-Authorization" })), "reserved"},
		{"empty value", base(with(func(i *Injection) { i.Value = "" })), "want 1-4096"},
		{"long value", base(with(func(i *Injection) { i.Value = strings.Repeat("v", MaxInjectionValueBytes+1) })), "want 1-4096"},
		{"CRLF in value", base(with(func(i *Injection) { i.Value = "t\r\nX-Evil: 1" })), "not visible ASCII"},
		{"non-ASCII value", base(with(func(i *Injection) { i.Value = "tö" })), "not visible ASCII"},
		{"blank edge", base(with(func(i *Injection) { i.Value = "t " })), "leading or trailing blank"},
		{"twice", base(ok, with(func(i *Injection) { i.Header = "authorization" })), "given twice"},
		{"not allowed", base(with(func(i *Injection) { i.Port = 8443 })), "does not allow"},
		{"too many", Grant{UID: "u", Expires: now.Unix() + 60, Allow: []Rule{{"api.test", 443}}, Inject: many}, "at most 8"},
	} {
		if _, err := Sign(testKey, tc.g); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Sign error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestGrantBounds signs the largest grant the bounds allow (32 rules of 253-byte names,
// MaxInjections of MaxInjectionValueBytes): it fits maxGrantBytes and verifies.
func TestGrantBounds(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	label := strings.Repeat("a", 63)
	long := func(i int) string {
		return strings.Join([]string{label, label, label, label[:58], "t" + string(rune('a'+i))}, ".")
	}
	g := Grant{Namespace: strings.Repeat("n", 63), Call: strings.Repeat("c", 253), UID: strings.Repeat("u", 36), Expires: now.Unix() + 60}
	for i := range 32 {
		g.Allow = append(g.Allow, Rule{long(i), 65535})
	}
	for i := range MaxInjections {
		g.Inject = append(g.Inject, Injection{Host: long(i), Port: 65535, Header: strings.Repeat("h", MaxInjectionHeaderBytes),
			Value: strings.Repeat("v", MaxInjectionValueBytes)})
	}
	if len(long(0)) != 253 {
		t.Fatalf("host of %d bytes, want 253", len(long(0)))
	}
	cred, err := Sign(testKey, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("largest grant: %d bytes (bound %d)", len(cred), maxGrantBytes)
	if _, err := Verify(testKey, cred, now); err != nil {
		t.Fatal(err)
	}
}
