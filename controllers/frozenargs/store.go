// Package frozenargs carries the arguments admission froze (pipeline.Frozen) from
// admission to every later use in the operator, checked on each use against the digest the
// call's status recorded.
package frozenargs

import (
	"cmp"
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

// Arguments are frozen once, at admission (hard rule 1). What admission froze is carried
// to every later use in the operator — the Job or the warm Pod's handover, post-execute's
// policies, the approval card — instead of being frozen again from spec.arguments: the
// canonical bytes with their parsed tree (pipeline.Frozen), which policies and the card
// need, so no later stage parses the arguments again.
//
// The digest is computed once, by the freeze, and carried with the bytes: an entry is used
// only for the same call (UID) and only when its digest is status.argumentsDigest, the
// digest the status recorded and the CRD keeps immutable (a comparison of two strings).
// Its bytes are not hashed again: a pipeline.Frozen is immutable and its digest was made
// of those very bytes by this process, which holds them in memory that nothing outside it
// writes; hashing them again on every use (the Job or handover, post-execute, the
// approval card) checked nothing an attacker can reach. Memory is bounded (maxFrozenCalls
// calls, maxFrozenBytes canonical bytes; past either, an entry is dropped), and an entry
// is forgotten when its call ends or is deleted. A call with no entry (after a restart, or
// one dropped) has spec.arguments, read back from the API server into this process,
// frozen once more, under the same limit and checked against the same digest as before:
// that is the one verification kept, since those bytes and that digest come from outside
// the process (the freeze hashes them anyway, to make the canonical bytes and tree). The
// result is kept: at most one freeze per call per process.

const (
	// maxFrozenCalls bounds how many calls' arguments are held.
	maxFrozenCalls = 4096
	// maxFrozenBytes bounds the canonical bytes held; the parsed trees come on top (their
	// strings share the canonical bytes, so a tree costs its maps and slices, about as much
	// again for dense JSON).
	maxFrozenBytes = 64 << 20
)

// errDigestMismatch: the arguments do not freeze to the digest admission recorded (e.g.
// --max-argument-bytes lowered since, or a status not written by this operator).
var errDigestMismatch = errors.New("they no longer freeze to the admitted digest")

// Store holds what admission froze, per call. The zero value is ready to use.
type Store struct {
	// maxCalls and maxBytes bound what is held; zero: maxFrozenCalls and maxFrozenBytes.
	maxCalls, maxBytes int

	mu      sync.Mutex
	entries map[types.NamespacedName]frozenEntry
	bytes   int
}

type frozenEntry struct {
	uid    types.UID
	frozen *pipeline.Frozen
}

// Put keeps what admission froze for call (its UID and the frozen arguments).
func (s *Store) Put(call *v1alpha1.ToolCall, f *pipeline.Frozen) {
	key := types.NamespacedName{Namespace: call.Namespace, Name: call.Name}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[types.NamespacedName]frozenEntry{}
	}
	s.dropLocked(key)
	maxCalls, maxBytes := cmp.Or(s.maxCalls, maxFrozenCalls), cmp.Or(s.maxBytes, maxFrozenBytes)
	if f.Len() > maxBytes {
		return
	}
	for k := range s.entries { // map order: an arbitrary entry goes, which costs one freeze later
		if len(s.entries) < maxCalls && s.bytes+f.Len() <= maxBytes {
			break
		}
		s.dropLocked(k)
	}
	s.entries[key] = frozenEntry{uid: call.UID, frozen: f}
	s.bytes += f.Len()
}

// Get returns the call's frozen arguments: admission's, when the entry is this call's and
// its digest is status.argumentsDigest (not hashed again: see above); otherwise spec.arguments frozen once more
// under maxBytes, checked against the digest and kept. A nil store (an executor built
// without one, in tests) keeps nothing and freezes every time.
func (s *Store) Get(call *v1alpha1.ToolCall, maxBytes int) (*pipeline.Frozen, error) {
	var e frozenEntry
	ok := false
	if s != nil {
		s.mu.Lock()
		e, ok = s.entries[types.NamespacedName{Namespace: call.Namespace, Name: call.Name}]
		s.mu.Unlock()
	}
	if ok && e.uid == call.UID && e.frozen.Digest() == call.Status.ArgumentsDigest {
		return e.frozen, nil
	}
	frozen, err := pipeline.Freeze(call.Spec.Arguments.Raw, pipeline.FreezeOptions{MaxBytes: maxBytes})
	if err != nil {
		return nil, err
	}
	if frozen.Digest() != call.Status.ArgumentsDigest {
		return nil, errDigestMismatch
	}
	if s != nil {
		s.Put(call, frozen)
	}
	return frozen, nil
}

// Forget drops the call's entry (it ended or is gone).
func (s *Store) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(key)
}

func (s *Store) dropLocked(key types.NamespacedName) {
	if e, ok := s.entries[key]; ok {
		s.bytes -= e.frozen.Len()
		delete(s.entries, key)
	}
}

// Size is how many calls' arguments are held.
func (s *Store) Size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
