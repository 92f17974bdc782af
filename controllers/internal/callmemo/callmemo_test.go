package callmemo

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// call is a Call: a key and a uid.
type call struct {
	ns, name string
	uid      types.UID
}

func (c call) GetNamespace() string { return c.ns }
func (c call) GetName() string      { return c.name }
func (c call) GetUID() types.UID    { return c.uid }

var (
	first = call{ns: "ns", name: "c", uid: "u1"}
	// again is a call of the same name made after first was deleted.
	again = call{ns: "ns", name: "c", uid: "u2"}
	other = call{ns: "ns", name: "d", uid: "u3"}
)

// A value is read back only for the call it was kept for: another uid under the same key
// reads nothing, and putting for it replaces the earlier call's value.
func TestMemoChecksTheUID(t *testing.T) {
	var m Memo[string]
	if _, ok := m.Get(first); ok {
		t.Fatal("an empty memo read a value")
	}
	m.Put(first, "a")
	if v, ok := m.Get(first); !ok || v != "a" {
		t.Fatalf("Get(first) = %q, %v; want a, true", v, ok)
	}
	if v, ok := m.Get(again); ok {
		t.Fatalf("a call of the same name read the earlier call's value %q", v)
	}
	if _, ok := m.Get(other); ok {
		t.Fatal("another call read a value")
	}
	m.Put(again, "b")
	if _, ok := m.Get(first); ok {
		t.Fatal("the earlier call's value outlived the later call's put")
	}
	if v, ok := m.Get(again); !ok || v != "b" || m.Len() != 1 {
		t.Fatalf("Get(again) = %q, %v with %d entries; want b, true with 1", v, ok, m.Len())
	}
}

// Update sees the value of the call's own uid only, and keeps what it makes.
func TestMemoUpdate(t *testing.T) {
	var m Memo[int]
	count := func(n int, ok bool) int {
		if !ok {
			return 1
		}
		return n + 1
	}
	for want := 1; want <= 3; want++ {
		if got := m.Update(first, count); got != want {
			t.Fatalf("Update #%d = %d", want, got)
		}
	}
	if got := m.Update(again, count); got != 1 {
		t.Fatalf("a call of the same name counted on from the earlier call's %d", got-1)
	}
	if got, _ := m.Get(again); got != 1 {
		t.Fatalf("Update kept %d, want 1", got)
	}
}

// Take reads the call's value and drops its key's entry, whoever's it was; Forget drops a
// key's entry.
func TestMemoTakeAndForget(t *testing.T) {
	var m Memo[string]
	m.Put(first, "a")
	m.Put(other, "d")
	if v, ok := m.Take(first); !ok || v != "a" {
		t.Fatalf("Take(first) = %q, %v", v, ok)
	}
	if _, ok := m.Take(first); ok {
		t.Fatal("a value was taken twice")
	}
	m.Put(first, "a")
	if _, ok := m.Take(again); ok {
		t.Fatal("a call of the same name took the earlier call's value")
	}
	if m.Len() != 1 {
		t.Fatalf("Take of another uid left %d entries, want 1 (its key's entry dropped)", m.Len())
	}
	m.Forget(Key(other))
	if _, ok := m.Get(other); ok || m.Len() != 0 {
		t.Fatalf("Forget left %d entries", m.Len())
	}
}

// PutWithin keeps at most Max entries: past it, the stale ones go first, and a put that
// still finds no room is skipped (the entries kept stay).
func TestMemoBound(t *testing.T) {
	limit := Limit[int]{Max: 3, Stale: func(kept, put int) bool { return put-kept > 10 }}
	var m Memo[int]
	for i := range 3 {
		if !m.PutWithin(call{ns: "ns", name: strconv.Itoa(i), uid: "u"}, i, limit) {
			t.Fatalf("put %d within the bound was skipped", i)
		}
	}
	if m.PutWithin(other, 5, limit) {
		t.Fatal("a put past the bound with nothing stale was kept")
	}
	if _, ok := m.Get(other); ok || m.Len() != 3 {
		t.Fatalf("%d entries after a skipped put, want 3", m.Len())
	}
	// 12 makes 0 and 1 stale (more than 10 before it), not 2.
	if !m.PutWithin(other, 12, limit) {
		t.Fatal("stale entries were not dropped to make room")
	}
	got := m.Keys(func(int) bool { return true })
	slices.SortFunc(got, func(a, b types.NamespacedName) int { return strings.Compare(a.Name, b.Name) })
	if want := []types.NamespacedName{{Namespace: "ns", Name: "2"}, Key(other)}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	noStale := Limit[int]{Max: 2}
	if m.PutWithin(first, 1, noStale) {
		t.Fatal("a put past a bound without Stale was kept")
	}
}

// Keys names the calls whose value matches.
func TestMemoKeys(t *testing.T) {
	var m Memo[string]
	m.Put(first, "pod-a")
	m.Put(other, "pod-b")
	if got := m.Keys(func(v string) bool { return v == "pod-b" }); !slices.Equal(got, []types.NamespacedName{Key(other)}) {
		t.Fatalf("Keys = %v, want [%v]", got, Key(other))
	}
	if got := m.Keys(func(v string) bool { return v == "pod-c" }); len(got) != 0 {
		t.Fatalf("Keys = %v, want none", got)
	}
}

// Concurrent updates of one call are not lost (run with -race).
func TestMemoConcurrentUpdates(t *testing.T) {
	var m Memo[int]
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				m.Update(first, func(n int, _ bool) int { return n + 1 })
				m.Get(first)
			}
		})
	}
	wg.Wait()
	if got, _ := m.Get(first); got != 800 {
		t.Fatalf("%d updates kept, want 800", got)
	}
}
