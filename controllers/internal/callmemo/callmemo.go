// Package callmemo keeps a value per call in memory (Memo): what a reconciler or an
// executor learned of a call in one pass and needs in a later one.
package callmemo

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Call is what a Memo knows a call by: its key, and its uid, which tells a call from an
// earlier one of the same name (*v1alpha1.ToolCall is one).
type Call interface {
	GetNamespace() string
	GetName() string
	GetUID() types.UID
}

// Limit bounds a Memo's puts: past Max entries, a put first drops every entry Stale says
// has expired (judged against the value put), and is skipped when that leaves no room.
type Limit[V any] struct {
	Max   int
	Stale func(kept, put V) bool
}

// Memo keeps a value per call, by the call's key, for the call with one uid: a value kept
// for an earlier call of the same name is never read as the current one's. It lives in
// memory only (a restart forgets it); its owner forgets a call's value when the call ends
// or is gone. The zero Memo is empty and ready; it is safe for concurrent use.
type Memo[V any] struct {
	mu sync.Mutex
	m  map[types.NamespacedName]entry[V]
}

type entry[V any] struct {
	uid types.UID
	v   V
}

// Key is the call's key.
func Key(c Call) types.NamespacedName {
	return types.NamespacedName{Namespace: c.GetNamespace(), Name: c.GetName()}
}

// Get is the value kept for the call (ok false when none is, or it is another uid's).
func (m *Memo[V]) Get(c Call) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[Key(c)]
	if !ok || e.uid != c.GetUID() {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put keeps v for the call, in place of whatever its key held.
func (m *Memo[V]) Put(c Call, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.put(Key(c), c.GetUID(), v)
}

// PutWithin is Put bounded by limit: it reports whether v was kept.
func (m *Memo[V]) PutWithin(c Call, v V, limit Limit[V]) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.m) >= limit.Max {
		for k, e := range m.m {
			if limit.Stale != nil && limit.Stale(e.v, v) {
				delete(m.m, k)
			}
		}
		if len(m.m) >= limit.Max {
			return false
		}
	}
	m.put(Key(c), c.GetUID(), v)
	return true
}

// Update keeps what f makes of the call's value (ok false: none was kept for its uid) and
// returns it, in one step. f runs under the Memo's lock: it must not use the Memo.
func (m *Memo[V]) Update(c Call, f func(v V, ok bool) V) V {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := Key(c)
	e, ok := m.m[key]
	if !ok || e.uid != c.GetUID() {
		ok, e.v = false, *new(V)
	}
	v := f(e.v, ok)
	m.put(key, c.GetUID(), v)
	return v
}

// Take is Get that drops what the call's key held, whoever's it was.
func (m *Memo[V]) Take(c Call) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := Key(c)
	e, ok := m.m[key]
	delete(m.m, key)
	if !ok || e.uid != c.GetUID() {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Forget drops what key holds (the call ended, or is gone).
func (m *Memo[V]) Forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, key)
}

// Keys are the keys whose value match reports on.
func (m *Memo[V]) Keys(match func(V) bool) []types.NamespacedName {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []types.NamespacedName
	for k, e := range m.m {
		if match(e.v) {
			out = append(out, k)
		}
	}
	return out
}

// Len is how many entries are kept.
func (m *Memo[V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

func (m *Memo[V]) put(key types.NamespacedName, uid types.UID, v V) {
	if m.m == nil {
		m.m = map[types.NamespacedName]entry[V]{}
	}
	m.m[key] = entry[V]{uid: uid, v: v}
}
