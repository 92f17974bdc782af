package frame

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// Keys from the namespace's master. No key is ever written into a Pod or Job spec (anyone
// with `get pods` could read it there), and no Pod ever holds more than its own attempt's
// key: each namespace has one master key in a Secret only the operator reads, and the
// operator derives from it what one attempt needs:
//
//	attempt key       = HMAC-SHA256(master, "toolgate-frame" ‖ callUID ‖ attempt)
//	handover signing  = Ed25519 key from the seed HMAC-SHA256(master, "toolgate-handover-signing")
//
// where ‖ joins fields each preceded by its length (4 bytes, big-endian), so no two
// different tuples give the same message, and the leading label keeps one key from ever
// being another. A frame signed with the attempt key names its call and attempt: it
// verifies for no other. A cold Pod's signer gets its attempt key from a per-attempt Secret;
// a warm Pod holds only the handover public keys until its Handover, signed by the operator
// for that Pod, brings the attempt key (VerifyHandover): whoever can attach to a pool Pod
// cannot have a body run under a real call's name, and nothing in the Pod signs for any
// other attempt.
const (
	labelFrame          = "toolgate-frame"
	labelHandover       = "toolgate-handover"
	labelHandoverSigner = "toolgate-handover-signing"
)

// AttemptKey is the frame key of one attempt of one call, derived from the namespace's
// master: the runner signs with it, the operator verifies with it.
func AttemptKey(master []byte, callUID string, attempt int) []byte {
	return derive(master, labelFrame, callUID, strconv.Itoa(attempt))
}

// HandoverPublicKey is the public key a warm Pod verifies the namespace's Handovers with
// (TOOLGATE_HANDOVER_KEYS, base64url).
func HandoverPublicKey(master []byte) ed25519.PublicKey {
	return handoverSigner(master).Public().(ed25519.PublicKey)
}

func handoverSigner(master []byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(derive(master, labelHandoverSigner))
}

// SignHandover returns h with Auth set: one signature per master the operator knows (the
// current one and, after a rotation, the previous), for the Pod podUID.
func SignHandover(masters [][]byte, podUID string, h Handover) Handover {
	h.Auth = nil
	msg := handoverMessage(podUID, h)
	for _, m := range masters {
		if len(m) > 0 && len(h.Auth) < MaxHandoverAuths {
			h.Auth = append(h.Auth, macEncoding.EncodeToString(ed25519.Sign(handoverSigner(m), msg)))
		}
	}
	return h
}

// VerifyHandover reports whether one of h.Auth is a signature of h for the Pod podUID by
// one of keys: the runner otherwise refuses the Handover and runs nothing.
func VerifyHandover(keys []ed25519.PublicKey, podUID string, h Handover) bool {
	if h.CallUID == "" || h.Attempt < 1 || podUID == "" || len(h.Auth) > MaxHandoverAuths || len(h.AttemptKey) == 0 {
		return false
	}
	msg := handoverMessage(podUID, h)
	for _, k := range keys {
		if len(k) != ed25519.PublicKeySize {
			continue
		}
		for _, a := range h.Auth {
			sig, err := macEncoding.DecodeString(a)
			if err == nil && ed25519.Verify(k, msg, sig) {
				return true
			}
		}
	}
	return false
}

// ParsePublicKeys reads TOOLGATE_HANDOVER_KEYS: base64url Ed25519 public keys, comma-separated.
func ParsePublicKeys(s string) ([]ed25519.PublicKey, error) {
	var out []ed25519.PublicKey
	for _, p := range strings.Split(s, ",") {
		if p == "" {
			continue
		}
		b, err := base64.RawURLEncoding.DecodeString(p)
		if err != nil || len(b) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("handover key %q is not a base64url Ed25519 public key", p)
		}
		out = append(out, ed25519.PublicKey(b))
	}
	return out, nil
}

// EncodePublicKeys is ParsePublicKeys' inverse.
func EncodePublicKeys(keys []ed25519.PublicKey) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = base64.RawURLEncoding.EncodeToString(k)
	}
	return strings.Join(parts, ",")
}

// handoverMessage is what a Handover's signature covers: everything but the arguments
// themselves, which the runner checks against the signed digest.
// A session Handover's own fields (deadline, variables) follow, after a "session" label,
// only when one is set: a warm Handover's message is what it always was, and, every field
// being length-prefixed, no warm message is a session one.
func handoverMessage(podUID string, h Handover) []byte {
	fields := []string{h.CallUID, strconv.Itoa(h.Attempt), podUID,
		h.ArgumentsDigest, h.Traceparent, base64.RawURLEncoding.EncodeToString(h.AttemptKey)}
	if h.DeadlineMs != 0 || len(h.Env) > 0 || len(h.SecretEnv) > 0 {
		fields = append(fields, "session", strconv.FormatInt(h.DeadlineMs, 10), strconv.Itoa(len(h.Env)))
		fields = append(fields, h.Env...)
		fields = append(fields, strconv.Itoa(len(h.SecretEnv)))
		fields = append(fields, h.SecretEnv...)
	}
	return derive([]byte(labelHandover), labelHandover, fields...)
}

// MaxHandoverAuths bounds Handover.Auth: one per master the operator knows.
const MaxHandoverAuths = 2

func derive(master []byte, label string, fields ...string) []byte {
	h := hmac.New(sha256.New, master)
	writeField(h, label)
	for _, f := range fields {
		writeField(h, f)
	}
	return h.Sum(nil)
}

func writeField(h hash.Hash, s string) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}
