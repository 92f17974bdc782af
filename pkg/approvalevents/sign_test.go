package approvalevents

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestSignKnownAnswer(t *testing.T) {
	// printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac k3y
	const want = "sha256=fd5a70e965043f7df6309c2c3b5ff5a8ffa99b1f5175e9a311459e73c4634d4a"
	ts, sig := Sign([]byte("k3y"), []byte(`{"a":1}`), time.Unix(1700000000, 0))
	if ts != "1700000000" || sig != want {
		t.Fatalf("Sign = %q, %q; want 1700000000, %q", ts, sig, want)
	}
}

func TestVerify(t *testing.T) {
	key, body := []byte("the-key"), []byte(`{"specversion":"1.0"}`)
	at := time.Unix(1_800_000_000, 0)
	ts, sig := Sign(key, body, at)
	clock := func(d time.Duration) func() time.Time { return func() time.Time { return at.Add(d) } }
	cases := []struct {
		name              string
		v                 Verifier
		body              []byte
		timestamp, signed string
		want              error
	}{
		{"valid", Verifier{Keys: [][]byte{key}, Now: clock(0)}, body, ts, sig, nil},
		{"valid within tolerance", Verifier{Keys: [][]byte{key}, Now: clock(4 * time.Minute)}, body, ts, sig, nil},
		{"second key during rotation", Verifier{Keys: [][]byte{[]byte("new"), key}, Now: clock(0)}, body, ts, sig, nil},
		{"wrong key", Verifier{Keys: [][]byte{[]byte("other")}, Now: clock(0)}, body, ts, sig, ErrSignature},
		{"no key", Verifier{Now: clock(0)}, body, ts, sig, ErrSignature},
		{"body changed", Verifier{Keys: [][]byte{key}, Now: clock(0)}, append(bytes.Clone(body), ' '), ts, sig, ErrSignature},
		{"timestamp changed", Verifier{Keys: [][]byte{key}, Now: clock(0)}, body, "1800000001", sig, ErrSignature},
		{"replayed later", Verifier{Keys: [][]byte{key}, Now: clock(6 * time.Minute)}, body, ts, sig, ErrTimestamp},
		{"from the future", Verifier{Keys: [][]byte{key}, Now: clock(-6 * time.Minute)}, body, ts, sig, ErrTimestamp},
		{"own tolerance", Verifier{Keys: [][]byte{key}, Now: clock(2 * time.Minute), Tolerance: time.Minute}, body, ts, sig, ErrTimestamp},
		{"no timestamp", Verifier{Keys: [][]byte{key}, Now: clock(0)}, body, "", sig, ErrTimestamp},
		{"no prefix", Verifier{Keys: [][]byte{key}, Now: clock(0)}, body, ts, strings.TrimPrefix(sig, "sha256="), ErrSignature},
		{"not hex", Verifier{Keys: [][]byte{key}, Now: clock(0)}, body, ts, "sha256=zz", ErrSignature},
		{"truncated", Verifier{Keys: [][]byte{key}, Now: clock(0)}, body, ts, sig[:len(sig)-2], ErrSignature},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.v.Verify(tc.body, tc.timestamp, tc.signed)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestRequest(t *testing.T) {
	key := []byte("k")
	at := time.Now()
	body, err := Marshal(TypeRequested, Data{Namespace: "ns", Name: "c", UID: "u1", Tool: "echo", Card: "echo hi"}, at)
	if err != nil {
		t.Fatal(err)
	}
	ts, sig := Sign(key, body, at)
	req := httptest.NewRequest("POST", "/", bytes.NewReader(body))
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, sig)
	n, err := Verifier{Keys: [][]byte{key}}.Request(req)
	if err != nil {
		t.Fatal(err)
	}
	if n.Event.Type() != TypeRequested || n.Data.Card != "echo hi" {
		t.Fatalf("got %s %+v", n.Event.Type(), n.Data)
	}

	big := httptest.NewRequest("POST", "/", bytes.NewReader(body))
	big.Header = req.Header
	if _, err := (Verifier{Keys: [][]byte{key}, MaxBodyBytes: 10}).Request(big); err == nil {
		t.Fatal("a body over MaxBodyBytes was read")
	}
	forged := httptest.NewRequest("POST", "/", bytes.NewReader(body))
	forged.Header = req.Header
	if _, err := (Verifier{Keys: [][]byte{[]byte("wrong")}}).Request(forged); !errors.Is(err, ErrSignature) {
		t.Fatalf("wrong key: %v, want ErrSignature", err)
	}
}
