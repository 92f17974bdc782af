package toolcall

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// readOf is the registry loadRegistry reads from a namespace holding policies.
func readOf(t *testing.T, policies ...client.Object) *registry {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	reg, err := loadRegistry(context.Background(), fake.NewClientBuilder().WithScheme(scheme).WithObjects(policies...).Build(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// A result back soon after admission is reviewed against admission's read (no LIST: the
// live reader fails every one here); a later one, another call's, or a second review, reads
// live, so a policy created while a long call ran governs its result.
func TestReviewReusesAdmissionsReadOnlyWhenFresh(t *testing.T) {
	block := postPolicy("late", v1alpha1.PolicyRule{Name: "all", Expression: "true",
		Action: v1alpha1.ActionBlock, Message: "blocked by a policy created during the call"})
	listDown := errors.New("the API server is unreachable")
	tests := []struct {
		name    string
		after   time.Duration
		other   bool
		listErr error
		phase   v1alpha1.ToolCallPhase
		reason  string
	}{
		{name: "within the window: admission's read, no LIST", after: time.Second, listErr: listDown,
			phase: v1alpha1.PhaseSucceeded, reason: "Succeeded"},
		{name: "past the window: a live read", after: reviewReuse + time.Second,
			phase: v1alpha1.PhaseFailed, reason: "ResultBlocked"},
		{name: "another call's read is never used", after: time.Second, other: true,
			phase: v1alpha1.PhaseFailed, reason: "ResultBlocked"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			call := runningCall(t, time.Now())
			f := newFinishFixture(t, call, tc.listErr, block)
			held := call.DeepCopy()
			if tc.other {
				held.UID = "an earlier call of the same name"
			}
			f.r.admission.held.put(held, readOf(t), f.clock.Now())
			f.clock.Step(tc.after)
			got, err := f.finish(t)
			if err != nil {
				t.Fatalf("finishAttempt: %v", err)
			}
			if got.Status.Phase != tc.phase || got.Status.Result == nil || got.Status.Result.Reason != tc.reason {
				t.Fatalf("phase %s result %+v, want %s/%s", got.Status.Phase, got.Status.Result, tc.phase, tc.reason)
			}
			if _, ok := f.r.admission.held.take(call, f.clock.Now()); ok {
				t.Fatal("the held read outlived the review")
			}
		})
	}
}

// The held reads are bounded: past maxHeldReads, expired entries go first, and a put that
// still finds no room is skipped.
func TestHeldReadsBounded(t *testing.T) {
	var h heldReads
	now := time.Now()
	reg := &registry{}
	for i := range maxHeldReads {
		c := &v1alpha1.ToolCall{}
		c.Namespace, c.Name, c.UID = "ns", "c"+strconv.Itoa(i), "u"
		h.put(c, reg, now)
	}
	late := &v1alpha1.ToolCall{}
	late.Namespace, late.Name, late.UID = "ns", "late", "u"
	h.put(late, reg, now)
	if _, ok := h.take(late, now); ok {
		t.Fatal("a put past the bound with nothing expired was kept")
	}
	h.put(late, reg, now.Add(reviewReuse+time.Second))
	if _, ok := h.take(late, now.Add(reviewReuse+time.Second)); !ok {
		t.Fatal("expired entries were not dropped to make room")
	}
	if h.m.Len() != 0 {
		t.Fatalf("%d expired entries kept", h.m.Len())
	}
}
