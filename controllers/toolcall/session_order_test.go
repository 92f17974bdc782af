package toolcall

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
)

func sessionCall(name, rv, issued string, created time.Time) v1alpha1.ToolCall {
	return v1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			ResourceVersion: rv, CreationTimestamp: metav1.NewTime(created)},
		Spec:   v1alpha1.ToolCallSpec{Session: "s", Requester: "alice"},
		Status: v1alpha1.ToolCallStatus{IssuedRevision: issued},
	}
}

func names(items []v1alpha1.ToolCall) []string {
	out := make([]string, len(items))
	for i := range items {
		out[i] = items[i].Name
	}
	return out
}

// Calls created within one second sort by the revision of their creation, not by name;
// revisions compare as integers (a longer one is later), not as strings.
func TestOrderOfIssue(t *testing.T) {
	sec := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var s issuedRevisions
	for _, tc := range []struct {
		name  string
		items []v1alpha1.ToolCall
		want  []string
	}{
		{"same second, names against the order", []v1alpha1.ToolCall{
			sessionCall("a-read", "103", "", sec), sessionCall("m-sh", "102", "", sec), sessionCall("z-write", "101", "", sec),
		}, []string{"z-write", "m-sh", "a-read"}},
		{"recorded revision wins over a later resourceVersion", []v1alpha1.ToolCall{
			sessionCall("b", "105", "", sec), sessionCall("a", "900", "104", sec),
		}, []string{"a", "b"}},
		{"integers, not strings", []v1alpha1.ToolCall{
			sessionCall("a", "10", "", sec), sessionCall("b", "9", "", sec.Add(time.Second)),
		}, []string{"b", "a"}},
		{"not comparable: creation time, then name", []v1alpha1.ToolCall{
			sessionCall("c", "x", "", sec.Add(time.Second)), sessionCall("b", "", "", sec), sessionCall("a", "y", "", sec),
		}, []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orderOfIssue(tc.items, s.of)
			if d := cmp.Diff(tc.want, names(tc.items)); d != "" {
				t.Errorf("order (-want +got):\n%s", d)
			}
		})
	}
}

// A call's first sighting orders it until admission records it: the record finalizer's
// patch moves its resourceVersion past a later call's, which must not overtake it.
func TestIssuedRevisionsKeepTheFirstSighting(t *testing.T) {
	sec := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var s issuedRevisions
	first := sessionCall("z-first", "101", "", sec)
	s.see(&first)
	first.ResourceVersion = "103" // the finalizer patch
	s.see(&first)
	second := sessionCall("a-second", "102", "", sec)
	items := []v1alpha1.ToolCall{second, first}
	orderOfIssue(items, s.of)
	if d := cmp.Diff([]string{"z-first", "a-second"}, names(items)); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}

	s.stamp(&first)
	if first.Status.IssuedRevision != "101" {
		t.Errorf("stamped %q, want the first sighting 101", first.Status.IssuedRevision)
	}
	recreated := sessionCall("z-first", "200", "", sec)
	recreated.UID = "other"
	if got := s.of(&recreated); got != "200" {
		t.Errorf("a recreated call of the same name is ordered by %q, want its own 200", got)
	}
	s.forget(types.NamespacedName{Namespace: "ns", Name: "z-first"})
	if got := s.of(&first); got != "101" {
		t.Errorf("after forget, the recorded revision still orders: got %q", got)
	}
	noSession := sessionCall("n", "7", "", sec)
	noSession.Spec.Session = ""
	s.stamp(&noSession)
	if noSession.Status.IssuedRevision != "" {
		t.Errorf("a call without a session got issuedRevision %q", noSession.Status.IssuedRevision)
	}
	bad := sessionCall("b", "not-a-number", "", sec)
	s.stamp(&bad)
	if bad.Status.IssuedRevision != "" {
		t.Errorf("an incomparable resourceVersion was recorded: %q", bad.Status.IssuedRevision)
	}
}

// The session key separates scopes and requesters that share a session name.
func TestSessionKey(t *testing.T) {
	call := func(scope, session, requester string) *v1alpha1.ToolCall {
		return &v1alpha1.ToolCall{Spec: v1alpha1.ToolCallSpec{Scope: scope, Session: session, Requester: requester}}
	}
	base := executor.SessionKey(call("sc", "s", "alice"))
	for _, other := range []*v1alpha1.ToolCall{call("sc", "s", "bob"), call("", "s", "alice"), call("sc", "t", "alice"), call("sc", "s\x00alice", "")} {
		if executor.SessionKey(other) == base {
			t.Errorf("%+v shares alice's session key", other.Spec)
		}
	}
	if executor.SessionKey(call("sc", "s", "alice")) != base {
		t.Error("the same (scope, session, requester) has two keys")
	}
	if got := executor.BySessionKey(call("sc", "", "alice")); got != nil {
		t.Errorf("a call without a session is indexed: %q", got)
	}
}
