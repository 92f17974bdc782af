package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

func mustFreeze(t *testing.T, args string) *pipeline.Frozen {
	t.Helper()
	f, err := pipeline.Freeze([]byte(args), pipeline.FreezeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Post-execute's policies see the arguments admission froze, carried from admission, not
// spec.arguments frozen again: a call object whose spec no longer holds those arguments
// (spec.arguments is immutable in the API; the reconciler does not read it again) is
// judged on admission's bytes. Frozen again, the different arguments would not match the
// admitted digest and the result would be withheld (PolicyError).
func TestPostExecuteUsesTheArgumentsAdmissionFroze(t *testing.T) {
	policy := postPolicy("seen", v1alpha1.PolicyRule{Name: "x", Expression: `arguments.text == "x"`,
		Action: v1alpha1.ActionBlock, Message: "admitted arguments seen"})
	r, c := unitReconciler(t, interceptor.Funcs{}, unitEcho(), unitCall("c", "echo"), policy)
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "ns", Name: "c"}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	call := &v1alpha1.ToolCall{}
	if err := c.Get(ctx, key, call); err != nil || call.Status.Phase != v1alpha1.PhaseRunning {
		t.Fatalf("phase %s: %v", call.Status.Phase, err)
	}
	job := &batchv1.Job{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: podspec.JobName("c", 1)}, job); err != nil {
		t.Fatal(err)
	}
	if got := jobArguments(job); got != `{"text":"x"}` {
		t.Fatalf("the Job carries %q, want the canonical arguments", got)
	}
	if r.frozen.size() != 1 {
		t.Fatalf("%d calls' arguments held after admission, want 1", r.frozen.size())
	}

	call.Spec.Arguments = runtime.RawExtension{Raw: []byte(`{"text":"y"}`)}
	o := pipeline.Outcome{Started: true, Attempt: 1, Report: &pipeline.Report{Stdout: []byte(`{"ok":1}`)}}
	if _, err := r.finishAttempt(ctx, call, o); err != nil {
		t.Fatal(err)
	}
	if res := call.Status.Result; res == nil || res.Reason != string(pipeline.ReasonResultBlocked) || res.Error != "admitted arguments seen" {
		t.Fatalf("result %+v, want the block of a policy that saw the admitted arguments", res)
	}
	if r.frozen.size() != 0 {
		t.Errorf("a finished call's arguments are still held")
	}
}

func jobArguments(job *batchv1.Job) string {
	for _, c := range job.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == podcontract.EnvArgs {
				return e.Value
			}
		}
	}
	return ""
}

// An entry is used only for its own call and only under the digest the status recorded;
// anything else is frozen once from spec.arguments and checked against that digest. A
// call with no entry (a restart) is frozen once and kept.
func TestFrozenArgumentsAreVerifiedBeforeUse(t *testing.T) {
	admitted := mustFreeze(t, `{"b":2,"a":1}`)
	call := unitCall("c", "echo")
	call.Spec.Arguments = runtime.RawExtension{Raw: []byte(`{"a":1,"b":2}`)}
	call.Status.ArgumentsDigest = admitted.Digest()

	t.Run("the call's own entry", func(t *testing.T) {
		var s frozenArguments
		s.put(call, admitted)
		if got, err := s.get(call, 0); err != nil || got != admitted {
			t.Fatalf("got %v, %v: want admission's Frozen itself", got, err)
		}
	})
	t.Run("another call of the same name", func(t *testing.T) {
		var s frozenArguments
		old := call.DeepCopy()
		old.UID = "an-older-call"
		s.put(old, mustFreeze(t, `{"a":"old"}`))
		got, err := s.get(call, 0)
		if err != nil || got.String() != `{"a":1,"b":2}` || got.Digest() != call.Status.ArgumentsDigest {
			t.Fatalf("got %v, %v: want spec.arguments frozen again", got, err)
		}
		if again, _ := s.get(call, 0); again != got {
			t.Errorf("the arguments frozen again are not kept")
		}
	})
	t.Run("bytes that do not hash to the status digest", func(t *testing.T) {
		var s frozenArguments
		s.put(call, mustFreeze(t, `{"a":1,"b":3}`))
		if got, err := s.get(call, 0); err != nil || got.String() != `{"a":1,"b":2}` {
			t.Fatalf("got %v, %v: want spec.arguments frozen again", got, err)
		}
	})
	t.Run("after a restart", func(t *testing.T) {
		var s frozenArguments
		got, err := s.get(call, 0)
		if err != nil || got.Digest() != call.Status.ArgumentsDigest || s.size() != 1 {
			t.Fatalf("got %v, %v, %d held", got, err, s.size())
		}
	})
	t.Run("spec.arguments that do not freeze to the digest", func(t *testing.T) {
		var s frozenArguments
		other := call.DeepCopy()
		other.Status.ArgumentsDigest = mustFreeze(t, `{"a":2}`).Digest()
		if got, err := s.get(other, 0); err == nil {
			t.Fatalf("got %v, want an error: the arguments are not the admitted ones", got)
		}
		if _, err := s.get(call, len(`{"a":1,"b":2}`)-1); err == nil {
			t.Fatalf("arguments over the limit froze")
		}
		if s.size() != 0 {
			t.Errorf("a failed freeze is held")
		}
	})
}

func TestHashes(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 4096, 4097, 3*4096 + 7} {
		s := strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
		d := frame.DigestOf([]byte(s))
		if !hashes(s, d) {
			t.Errorf("%d bytes: the digest does not match", len(s))
		}
		if hashes(s+" ", d) || hashes(s, strings.TrimPrefix(d, "sha256:")) || hashes(s, d[:len(d)-1]) {
			t.Errorf("%d bytes: a wrong digest matches", len(s))
		}
	}
}

// What is held is bounded in calls and bytes; a call that ended or is gone is forgotten.
func TestFrozenArgumentsAreBoundedAndForgotten(t *testing.T) {
	s := frozenArguments{maxCalls: 3, maxBytes: 64}
	for i := range 10 {
		c := unitCall(fmt.Sprintf("c%d", i), "echo")
		s.put(c, mustFreeze(t, fmt.Sprintf(`{"i":%d}`, i)))
		if s.size() > 3 || s.bytes > 64 {
			t.Fatalf("after %d puts: %d calls, %d bytes held", i+1, s.size(), s.bytes)
		}
	}
	big := unitCall("big", "echo")
	s.put(big, mustFreeze(t, `{"text":"`+strings.Repeat("x", 64)+`"}`))
	if s.size() > 3 || s.bytes > 64 {
		t.Fatalf("an entry over the byte bound is held: %d calls, %d bytes", s.size(), s.bytes)
	}
	for i := range 10 {
		s.forget(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("c%d", i)})
	}
	if s.size() != 0 || s.bytes != 0 {
		t.Fatalf("%d calls, %d bytes held after all were forgotten", s.size(), s.bytes)
	}

	// Through the reconciler: a deleted call's arguments go with it.
	r, c := unitReconciler(t, interceptor.Funcs{}, unitEcho(), unitCall("gone", "echo"))
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "gone"}}
	if _, err := r.Reconcile(ctx, req); err != nil || r.frozen.size() != 1 {
		t.Fatalf("admission: %v, %d held", err, r.frozen.size())
	}
	if err := c.Delete(ctx, unitCall("gone", "echo")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil || r.frozen.size() != 0 {
		t.Fatalf("after deletion: %v, %d held", err, r.frozen.size())
	}
}

// Concurrent passes of different calls share the carrier (run with -race).
func TestFrozenArgumentsConcurrentUse(t *testing.T) {
	s := frozenArguments{maxCalls: 8}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			c := unitCall(fmt.Sprintf("c%d", i%4), "echo")
			c.UID = types.UID(fmt.Sprintf("u%d", i))
			f := mustFreeze(t, fmt.Sprintf(`{"i":%d}`, i))
			c.Spec.Arguments.Raw = []byte(f.String())
			c.Status.ArgumentsDigest = f.Digest()
			for range 50 {
				s.put(c, f)
				if got, err := s.get(c, 0); err != nil || got.Digest() != f.Digest() {
					t.Errorf("got %v, %v", got, err)
					return
				}
				s.forget(client.ObjectKeyFromObject(c))
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
			call := unitCall("c", "echo")
			call.Spec.Arguments = runtime.RawExtension{Raw: args}
			call.Status.ArgumentsDigest = f.Digest()
			var s frozenArguments
			s.put(call, f)
			for b.Loop() {
				for range 2 {
					if _, err := s.get(call, 0); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
