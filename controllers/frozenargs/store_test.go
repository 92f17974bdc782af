package frozenargs

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

func mustFreeze(t *testing.T, args string) *pipeline.Frozen {
	t.Helper()
	f, err := pipeline.Freeze([]byte(args), pipeline.FreezeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// testCall is call name in namespace "ns", its uid derived from its name.
func testCall(name string) *v1alpha1.ToolCall {
	return &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1alpha1.ToolCallSpec{Arguments: runtime.RawExtension{Raw: []byte(`{"text":"x"}`)}}}
}

// An entry is used only for its own call and only under the digest the status recorded;
// anything else is frozen once from spec.arguments and checked against that digest. A
// call with no entry (a restart) is frozen once and kept.
func TestFrozenArgumentsAreVerifiedBeforeUse(t *testing.T) {
	admitted := mustFreeze(t, `{"b":2,"a":1}`)
	call := testCall("c")
	call.Spec.Arguments = runtime.RawExtension{Raw: []byte(`{"a":1,"b":2}`)}
	call.Status.ArgumentsDigest = admitted.Digest()

	t.Run("the call's own entry", func(t *testing.T) {
		var s Store
		s.Put(call, admitted)
		if got, err := s.Get(call, 0); err != nil || got != admitted {
			t.Fatalf("got %v, %v: want admission's Frozen itself", got, err)
		}
	})
	t.Run("another call of the same name", func(t *testing.T) {
		var s Store
		old := call.DeepCopy()
		old.UID = "an-older-call"
		s.Put(old, mustFreeze(t, `{"a":"old"}`))
		got, err := s.Get(call, 0)
		if err != nil || got.String() != `{"a":1,"b":2}` || got.Digest() != call.Status.ArgumentsDigest {
			t.Fatalf("got %v, %v: want spec.arguments frozen again", got, err)
		}
		if again, _ := s.Get(call, 0); again != got {
			t.Errorf("the arguments frozen again are not kept")
		}
	})
	t.Run("an entry whose digest is not the status's", func(t *testing.T) {
		var s Store
		s.Put(call, mustFreeze(t, `{"a":1,"b":3}`))
		if got, err := s.Get(call, 0); err != nil || got.String() != `{"a":1,"b":2}` {
			t.Fatalf("got %v, %v: want spec.arguments frozen again", got, err)
		}
	})
	t.Run("after a restart", func(t *testing.T) {
		var s Store
		got, err := s.Get(call, 0)
		if err != nil || got.Digest() != call.Status.ArgumentsDigest || s.Size() != 1 {
			t.Fatalf("got %v, %v, %d held", got, err, s.Size())
		}
	})
	t.Run("spec.arguments that do not freeze to the digest", func(t *testing.T) {
		var s Store
		other := call.DeepCopy()
		other.Status.ArgumentsDigest = mustFreeze(t, `{"a":2}`).Digest()
		if got, err := s.Get(other, 0); err == nil {
			t.Fatalf("got %v, want an error: the arguments are not the admitted ones", got)
		}
		if _, err := s.Get(call, len(`{"a":1,"b":2}`)-1); err == nil {
			t.Fatalf("arguments over the limit froze")
		}
		if s.Size() != 0 {
			t.Errorf("a failed freeze is held")
		}
	})
}

// The digest is made once, by the freeze, and carried: a held entry of the call whose
// digest is the status's is used as it is, its bytes not hashed (nor frozen) again. To see
// that, the entry's bytes are changed under it (through unsafe: nothing in the operator can
// change a pipeline.Frozen); a Get that hashed them would refuse the entry and freeze
// spec.arguments again.
func TestFrozenArgumentsAreNotHashedAgain(t *testing.T) {
	admitted := mustFreeze(t, `{"text":"x"}`)
	call := testCall("c")
	call.Status.ArgumentsDigest = admitted.Digest()
	var s Store
	s.Put(call, admitted)
	canonical := reflect.ValueOf(admitted).Elem().FieldByName("canonical")
	reflect.NewAt(canonical.Type(), unsafe.Pointer(canonical.UnsafeAddr())).Elem().SetString(`{"text":"y"}`)
	if got, err := s.Get(call, 0); err != nil || got != admitted {
		t.Fatalf("got %v, %v: want the held entry itself, not hashed again", got, err)
	}
}

// What is held is bounded in calls and bytes; a call that ended or is gone is forgotten.
func TestFrozenArgumentsAreBoundedAndForgotten(t *testing.T) {
	s := Store{maxCalls: 3, maxBytes: 64}
	for i := range 10 {
		c := testCall(fmt.Sprintf("c%d", i))
		s.Put(c, mustFreeze(t, fmt.Sprintf(`{"i":%d}`, i)))
		if s.Size() > 3 || s.bytes > 64 {
			t.Fatalf("after %d puts: %d calls, %d bytes held", i+1, s.Size(), s.bytes)
		}
	}
	big := testCall("big")
	s.Put(big, mustFreeze(t, `{"text":"`+strings.Repeat("x", 64)+`"}`))
	if s.Size() > 3 || s.bytes > 64 {
		t.Fatalf("an entry over the byte bound is held: %d calls, %d bytes", s.Size(), s.bytes)
	}
	for i := range 10 {
		s.Forget(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("c%d", i)})
	}
	if s.Size() != 0 || s.bytes != 0 {
		t.Fatalf("%d calls, %d bytes held after all were forgotten", s.Size(), s.bytes)
	}
}

// Concurrent passes of different calls share the carrier (run with -race).
func TestFrozenArgumentsConcurrentUse(t *testing.T) {
	s := Store{maxCalls: 8}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			c := testCall(fmt.Sprintf("c%d", i%4))
			c.UID = types.UID(fmt.Sprintf("u%d", i))
			f := mustFreeze(t, fmt.Sprintf(`{"i":%d}`, i))
			c.Spec.Arguments.Raw = []byte(f.String())
			c.Status.ArgumentsDigest = f.Digest()
			for range 50 {
				s.Put(c, f)
				if got, err := s.Get(c, 0); err != nil || got.Digest() != f.Digest() {
					t.Errorf("got %v, %v", got, err)
					return
				}
				s.Forget(client.ObjectKeyFromObject(c))
			}
		})
	}
	wg.Wait()
}

// BenchmarkArgumentsAfterAdmission is what a call's arguments cost after admission froze
// them: stage 5 (the Job or the warm handover) and post-execute each take them.
func BenchmarkArgumentsAfterAdmission(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("args=%dKiB", size>>10), func(b *testing.B) {
			args := []byte(`{"n":1,"text":"` + strings.Repeat("a", size) + `"}`)
			f, err := pipeline.Freeze(args, pipeline.FreezeOptions{})
			if err != nil {
				b.Fatal(err)
			}
			call := testCall("c")
			call.Spec.Arguments = runtime.RawExtension{Raw: args}
			call.Status.ArgumentsDigest = f.Digest()
			var s Store
			s.Put(call, f)
			for b.Loop() {
				for range 2 {
					if _, err := s.Get(call, 0); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
