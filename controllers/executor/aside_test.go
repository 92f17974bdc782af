package executor_test

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
)

func asideCall(uid string) *v1alpha1.ToolCall {
	c := &v1alpha1.ToolCall{}
	c.Namespace, c.Name, c.UID = "ns", "call-"+uid, types.UID("uid-"+uid)
	return c
}

// A call's work runs once while its run is known; its end is recorded before it wakes the
// call's reconcile, naming the call; forgotten, it runs again.
func TestAsideRunsOncePerCallAndWakesIt(t *testing.T) {
	a := executor.NewAside[int, string]()
	call := asideCall("a")
	release := make(chan struct{})
	runs := 0
	a.Start(call, "first", func() (int, error) {
		runs++
		<-release
		return 7, errors.New("broke")
	})
	a.Start(call, "second", func() (int, error) {
		runs++
		return 8, nil
	})
	if run, ok := a.Get(call.UID); !ok || run.Done || run.Note != "first" {
		t.Fatalf("while running: %+v, %v; want the first, not done", run, ok)
	}
	close(release)
	wake := <-a.Wakeups()
	if wake.Object.GetNamespace() != "ns" || wake.Object.GetName() != "call-a" {
		t.Errorf("woke %s/%s, want ns/call-a", wake.Object.GetNamespace(), wake.Object.GetName())
	}
	run, ok := a.Get(call.UID)
	if !ok || !run.Done || run.Result != 7 || run.Err == nil || run.Note != "first" {
		t.Errorf("after its end: %+v, %v; want done, 7, its error, noted first", run, ok)
	}
	if runs != 1 {
		t.Errorf("the work ran %d times, want once", runs)
	}
	a.Forget(call.UID)
	if _, ok := a.Get(call.UID); ok {
		t.Error("a forgotten run is still known")
	}
	a.Start(call, "again", func() (int, error) { return 9, nil })
	<-a.Wakeups()
	if run, _ := a.Get(call.UID); run.Result != 9 || run.Note != "again" {
		t.Errorf("started again: %+v, want 9, noted again", run)
	}
}

// A note edits a known run; for an unknown call it makes an entry only when asked, and that
// entry keeps the call's work from starting.
func TestAsideNotes(t *testing.T) {
	a := executor.NewAside[int, string]()
	known, unknown, made := asideCall("k"), asideCall("u"), asideCall("m")
	a.Start(known, "", func() (int, error) { return 1, nil })
	<-a.Wakeups()
	a.Note(known.UID, false, func(n *string) { *n = "edited" })
	if run, _ := a.Get(known.UID); run.Note != "edited" || run.Result != 1 {
		t.Errorf("known run: %+v, want noted edited, result kept", run)
	}
	a.Note(unknown.UID, false, func(n *string) { *n = "x" })
	if _, ok := a.Get(unknown.UID); ok {
		t.Error("a note without create made an entry")
	}
	a.Note(made.UID, true, func(n *string) { *n = "pod" })
	if run, ok := a.Get(made.UID); !ok || run.Done || run.Note != "pod" {
		t.Errorf("created note: %+v, %v; want an entry noted pod, not done", run, ok)
	}
	a.Start(made, "started", func() (int, error) { return 0, nil })
	if run, _ := a.Get(made.UID); run.Note != "pod" {
		t.Errorf("work started for a call with a noted entry: %+v", run)
	}
}
