package frame

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
)

func TestHandoverRoundTrip(t *testing.T) {
	in := Handover{CallUID: "uid", Attempt: 2, Auth: []string{"x"}, Arguments: []byte(`{"a":"$(x)\n"}`), ArgumentsDigest: DigestOf([]byte(`{"a":"$(x)\n"}`)), Traceparent: "00-abc-def-01"}
	line, err := EncodeHandover(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ReadHandover(bytes.NewReader(append(line, []byte("ignored after the line")...)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Arguments, in.Arguments) || out.ArgumentsDigest != in.ArgumentsDigest || out.Traceparent != in.Traceparent ||
		out.CallUID != in.CallUID || out.Attempt != in.Attempt || len(out.Auth) != 1 {
		t.Fatalf("got %+v, want %+v", out, in)
	}
}

func TestReadHandoverRefuses(t *testing.T) {
	for name, input := range map[string]string{
		"empty":         "",
		"no newline":    `{"arguments":"e30=","argumentsDigest":"x"}`,
		"unknown field": `{"arguments":"e30=","argumentsDigest":"x","argsFile":"/etc"}` + "\n",
		"not json":      "hello\n",
		"too long":      strings.Repeat("a", MaxHandoverBytes+10) + "\n",
	} {
		if _, err := ReadHandover(strings.NewReader(input)); !errors.Is(err, ErrNoHandover) {
			t.Errorf("%s: err = %v, want ErrNoHandover", name, err)
		}
	}
}

func TestLastResultLine(t *testing.T) {
	out := append([]byte("noise\n--toolgate-warm-result Zm9yZ2Vk\n"), ResultLine([]byte("tgs1:real"))...)
	msg, ok := LastResultLine(out)
	if !ok || msg != "tgs1:real" {
		t.Fatalf("got %q %v", msg, ok)
	}
	if _, ok := LastResultLine([]byte("--toolgate-warm-result Zm9y")); ok {
		t.Fatal("an unterminated line must not count")
	}
	if _, ok := LastResultLine(ResultLine(bytes.Repeat([]byte("x"), MaxTerminationMessage+1))); ok {
		t.Fatal("a line longer than a termination message must not count")
	}
}

func testMaster(t *testing.T) []byte {
	t.Helper()
	s, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// An attempt key names one call and one attempt of one namespace's master: a frame signed
// for any other verifies with none of them.
func TestAttemptKeyNamesCallAndAttempt(t *testing.T) {
	master, other := testMaster(t), testMaster(t)
	key := AttemptKey(master, "uid-1", 1)
	if !bytes.Equal(key, AttemptKey(master, "uid-1", 1)) {
		t.Fatal("the derivation is not deterministic")
	}
	f := Frame{ExitCode: 0, ArgsDigest: DigestOf([]byte(`{}`))}
	msg, _, err := Encoder{Key: key}.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string][]byte{
		"other attempt": AttemptKey(master, "uid-1", 2),
		"other call":    AttemptKey(master, "uid-2", 1),
		"other master":  AttemptKey(other, "uid-1", 1),
		// length-prefixed fields: "uid-1"+"1" never reads as "uid-"+"11"
		"shifted fields": AttemptKey(master, "uid-", 11),
		"the master":     master,
	} {
		if _, _, err := (Decoder{Key: k}).DecodeTermination(string(msg)); !errors.Is(err, ErrSignature) {
			t.Errorf("%s: err = %v, want ErrSignature", name, err)
		}
	}
	if _, _, err := (Decoder{Keys: [][]byte{AttemptKey(other, "uid-1", 1), key}}).DecodeTermination(string(msg)); err != nil {
		t.Errorf("any of the decoder's keys verifies: %v", err)
	}
}

// A Handover is taken only with a signature made from a master the runner holds the public
// key of, for its own Pod and for exactly the call, attempt, digest, traceparent and attempt
// key it carries.
func TestVerifyHandover(t *testing.T) {
	master, previous, other := testMaster(t), testMaster(t), testMaster(t)
	digest := DigestOf([]byte(`{"a":1}`))
	pub := func(ms ...[]byte) []ed25519.PublicKey {
		var out []ed25519.PublicKey
		for _, m := range ms {
			out = append(out, HandoverPublicKey(m))
		}
		return out
	}
	signed := func(ms [][]byte, mutate func(*Handover)) Handover {
		h := Handover{CallUID: "uid-1", Attempt: 1, ArgumentsDigest: digest, Arguments: []byte(`{"a":1}`),
			AttemptKey: AttemptKey(master, "uid-1", 1)}
		h = SignHandover(ms, "pod-1", h)
		if mutate != nil {
			mutate(&h)
		}
		return h
	}
	one := [][]byte{master}
	if !VerifyHandover(pub(master), "pod-1", signed(one, nil)) {
		t.Fatal("a Handover signed for the Pod with its key is refused")
	}
	// After a rotation the operator signs with both masters; a Pod started before it holds
	// the old public key only.
	if !VerifyHandover(pub(previous), "pod-1", signed([][]byte{master, previous}, nil)) {
		t.Fatal("an old Pod refuses the signature made with its key")
	}
	for name, tc := range map[string]struct {
		h   Handover
		pod string
	}{
		"no auth":             {signed(one, func(h *Handover) { h.Auth = nil }), "pod-1"},
		"garbage auth":        {signed(one, func(h *Handover) { h.Auth = []string{"not-a-signature"} }), "pod-1"},
		"another master":      {signed([][]byte{other}, nil), "pod-1"},
		"another Pod":         {signed(one, nil), "pod-2"},
		"no Pod uid":          {signed(one, nil), ""},
		"another call":        {signed(one, func(h *Handover) { h.CallUID = "uid-2" }), "pod-1"},
		"another attempt":     {signed(one, func(h *Handover) { h.Attempt = 2 }), "pod-1"},
		"another digest":      {signed(one, func(h *Handover) { h.ArgumentsDigest = DigestOf([]byte(`{}`)) }), "pod-1"},
		"another attempt key": {signed(one, func(h *Handover) { h.AttemptKey = AttemptKey(other, "uid-1", 1) }), "pod-1"},
		"no attempt key":      {signed(one, func(h *Handover) { h.AttemptKey = nil }), "pod-1"},
		"another traceparent": {signed(one, func(h *Handover) { h.Traceparent = "00-x" }), "pod-1"},
		"no call":             {signed(one, func(h *Handover) { h.CallUID = "" }), "pod-1"},
		"too many auths":      {signed(one, func(h *Handover) { h.Auth = []string{"a", "b", h.Auth[0]} }), "pod-1"},
		"an HMAC as auth":     {signed(one, func(h *Handover) { h.Auth = []string{macEncoding.EncodeToString(AttemptKey(master, "uid-1", 1))} }), "pod-1"},
	} {
		if VerifyHandover(pub(master, previous), tc.pod, tc.h) {
			t.Errorf("%s: taken", name)
		}
	}
	if VerifyHandover(nil, "pod-1", signed(one, nil)) {
		t.Error("a runner without a key takes a Handover")
	}
	keys, err := ParsePublicKeys(EncodePublicKeys(pub(master, previous)))
	if err != nil || len(keys) != 2 || !keys[1].Equal(HandoverPublicKey(previous)) {
		t.Fatalf("public keys do not round-trip: %v %v", keys, err)
	}
	if _, err := ParsePublicKeys("not a key"); err == nil {
		t.Error("a malformed public key is taken")
	}
}
