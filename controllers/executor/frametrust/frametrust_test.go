package frametrust

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/pkg/frame"
)

// rotatingMasters is a namespace's masters as the store keeps them: cached until a fresh
// read, which sees the Secret as it is now.
type rotatingMasters struct {
	cached, secret [][]byte
	freshReads     int
}

func (m *rotatingMasters) get(_ context.Context, fresh bool) ([][]byte, error) {
	if fresh {
		m.freshReads++
		m.cached = m.secret
	}
	return m.cached, nil
}

func newMaster(t *testing.T) []byte {
	t.Helper()
	text, err := frame.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	m, err := frame.ParseKey(text)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A rotation (key moved to previous, a new key written) is seen at the first frame that
// does not verify with the cached masters: frames of Pods started before it (the old master)
// and after it (the new one) both verify; a frame of neither still does not.
func TestTrustSeesRotation(t *testing.T) {
	const uid = types.UID("call-uid")
	digest := frame.DigestOf([]byte(`{}`))
	oldMaster, rotated, otherMaster := newMaster(t), newMaster(t), newMaster(t)
	masters := &rotatingMasters{cached: [][]byte{oldMaster}, secret: [][]byte{rotated, oldMaster}}
	trust := Trust{Masters: masters.get, CallUID: uid, Attempt: 1, Digest: digest, MaxOutput: 1000}
	signed := func(master []byte, stdout string) string {
		f := frame.Frame{ArgsDigest: digest, StdoutBytes: int64(len(stdout))}
		f.SetStdout([]byte(stdout))
		msg, _, err := frame.Encoder{Key: frame.AttemptKey(master, string(uid), 1)}.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(msg)
	}
	for name, master := range map[string][]byte{"old master": oldMaster, "new master": rotated} {
		if _, _, _, err := trust.Termination(context.Background(), signed(master, "hello")); err != nil {
			t.Errorf("a frame signed with the %s: %v", name, err)
		}
	}
	if masters.freshReads != 1 {
		t.Errorf("%d fresh reads of the masters, want 1 (once after the rotation)", masters.freshReads)
	}
	if _, _, _, err := trust.Termination(context.Background(), signed(otherMaster, "FORGED")); !errors.Is(err, frame.ErrSignature) {
		t.Errorf("a frame of another master: %v", err)
	}
}

// A frame signed for the attempt but naming other arguments is not the call's.
func TestTrustOtherArguments(t *testing.T) {
	master := newMaster(t)
	trust := Trust{Masters: func(context.Context, bool) ([][]byte, error) { return [][]byte{master}, nil },
		CallUID: "u", Attempt: 2, Digest: frame.DigestOf([]byte(`{}`)), MaxOutput: 1000}
	msg, _, err := frame.Encoder{Key: frame.AttemptKey(master, "u", 2)}.Encode(frame.Frame{ArgsDigest: frame.DigestOf([]byte(`{"a":1}`))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Read(context.Background(), string(msg), nil); !errors.Is(err, ErrOtherArguments) {
		t.Errorf("a frame for other arguments: %v", err)
	}
}
