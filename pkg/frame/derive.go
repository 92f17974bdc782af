package frame

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"strconv"
)

// Keys from the namespace's master. No frame key is ever written into a Pod or Job spec
// (anyone with `get pods` could read it there): each namespace has one master key in a
// Secret only the operator and the kubelet read, tool containers get it by secretKeyRef,
// and the runner and the operator derive from it what one attempt needs:
//
//	attempt key    = HMAC-SHA256(master, "toolgate-frame" ‖ callUID ‖ attempt)
//	handover auth  = HMAC-SHA256(master, "toolgate-handover" ‖ callUID ‖ attempt ‖ podUID ‖ argsDigest)
//
// where ‖ joins fields each preceded by its length (4 bytes, big-endian), so no two
// different tuples give the same message, and the leading label keeps a handover
// authenticator from ever being a frame key. A frame signed with the attempt key names its
// call and attempt: it verifies for no other. The runner takes a Handover only when its
// auth verifies (VerifyHandover): whoever can attach to a pool Pod but not read the Secret
// cannot have a body run under a real call's name.
const (
	labelFrame    = "toolgate-frame"
	labelHandover = "toolgate-handover"
)

// AttemptKey is the frame key of one attempt of one call, derived from the namespace's
// master: the runner signs with it, the operator verifies with it.
func AttemptKey(master []byte, callUID string, attempt int) []byte {
	return derive(master, labelFrame, callUID, strconv.Itoa(attempt))
}

// HandoverAuth authenticates one Handover for one warm Pod (its metadata.uid): the
// operator sends one per master it knows (the current one and, after a rotation, the
// previous), encoded as a signature is.
func HandoverAuth(master []byte, callUID string, attempt int, podUID, argsDigest string) string {
	return macEncoding.EncodeToString(derive(master, labelHandover, callUID, strconv.Itoa(attempt), podUID, argsDigest))
}

// VerifyHandover returns the master among masters that authenticates h for the Pod podUID
// (one of h.Auth, compared in constant time), and false when none does: the runner then
// refuses the Handover and runs nothing.
func VerifyHandover(masters [][]byte, podUID string, h Handover) ([]byte, bool) {
	if h.CallUID == "" || h.Attempt < 1 || podUID == "" || len(h.Auth) > MaxHandoverAuths {
		return nil, false
	}
	for _, m := range masters {
		if len(m) == 0 {
			continue
		}
		want := derive(m, labelHandover, h.CallUID, strconv.Itoa(h.Attempt), podUID, h.ArgumentsDigest)
		for _, a := range h.Auth {
			got, err := macEncoding.DecodeString(a)
			if err == nil && hmac.Equal(got, want) {
				return m, true
			}
		}
	}
	return nil, false
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
