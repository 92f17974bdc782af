package history

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// finishedCall is a Succeeded call that completed at completed.
func finishedCall(name string, completed time.Time) *v1alpha1.ToolCall {
	return &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Status: v1alpha1.ToolCallStatus{Phase: v1alpha1.PhaseSucceeded, CompletionTime: &metav1.Time{Time: completed}}}
}

// historyOf makes calls of one requester, named <requester><i>, finished at the given
// minutes (relative to now; larger is newer).
func historyOf(now time.Time, requester string, minutes ...int) []*v1alpha1.ToolCall {
	var calls []*v1alpha1.ToolCall
	for i, m := range minutes {
		call := finishedCall(fmt.Sprintf("%s%d", requester, i), now.Add(time.Duration(m)*time.Minute))
		call.Spec.Requester = requester
		calls = append(calls, call)
	}
	return calls
}

// The history limit is the namespace's; who loses is shared fairly between requesters, so
// a flood of one requester's calls pushes out its own and not other users'.
func TestHistoryBeyondFairBetweenRequesters(t *testing.T) {
	now := time.Now()
	flood := make([]int, 100)
	for i := range flood {
		flood[i] = -i // mallory0 is the newest, mallory99 the oldest
	}
	cases := []struct {
		name  string
		calls []*v1alpha1.ToolCall
		limit int
		want  []string // deleted, sorted
	}{{
		name:  "a flood pushes out only the flooder's oldest",
		calls: slices.Concat(historyOf(now, "alice", -500, -400), historyOf(now, "mallory", flood...)),
		limit: 10,
		want:  names("mallory", 8, 100),
	}, {
		name: "two heavy requesters split the limit evenly; a light one keeps all",
		calls: slices.Concat(historyOf(now, "alice", -9), historyOf(now, "bob", 0, -1, -2, -3, -4, -5),
			historyOf(now, "carol", -10, -11, -12, -13, -14, -15)),
		limit: 7,
		want:  []string{"bob3", "bob4", "bob5", "carol3", "carol4", "carol5"},
	}, {
		name:  "a place left over goes to the group whose next call is newest",
		calls: slices.Concat(historyOf(now, "bob", 0, -3, -4), historyOf(now, "carol", -1, -2, -5)),
		limit: 3,
		// each keeps one; the third place goes to carol, whose second call (-2) is newer than bob's (-3)
		want: []string{"bob1", "bob2", "carol2"},
	}, {
		name:  "more requesters than places: the newest calls stay",
		calls: slices.Concat(historyOf(now, "a", -3), historyOf(now, "b", -1), historyOf(now, "c", -2), historyOf(now, "d", 0)),
		limit: 2,
		want:  []string{"a0", "c0"},
	}, {
		name:  "one requester: the newest limit calls stay",
		calls: historyOf(now, "alice", -3, 0, -1, -4),
		limit: 2,
		want:  []string{"alice0", "alice3"},
	}, {
		name:  "calls without a requester are a requester of their own",
		calls: slices.Concat(historyOf(now, "", 0, -1, -2), historyOf(now, "alice", -10)),
		limit: 2,
		want:  []string{"1", "2"},
	}, {
		name:  "within the limit nothing goes",
		calls: slices.Concat(historyOf(now, "alice", 0), historyOf(now, "bob", 0)),
		limit: 2,
	}, {
		name:  "limit 0 is no limit",
		calls: historyOf(now, "alice", 0, -1, -2),
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range beyond(tc.calls, tc.limit) {
				got = append(got, c.Name)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("deleted (-want +got):\n%s", diff)
			}
			if tc.limit > 0 && len(tc.calls) > tc.limit && len(tc.calls)-len(got) != tc.limit {
				t.Errorf("%d calls kept, want the limit %d", len(tc.calls)-len(got), tc.limit)
			}
		})
	}
}

// names returns prefix+i for i in [from, to), sorted as strings.
func names(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	slices.Sort(out)
	return out
}

// The history limit keeps the newest by completion time and returns the rest.
func TestHistoryBeyond(t *testing.T) {
	now := time.Now()
	var calls []*v1alpha1.ToolCall
	for name, minutes := range map[string]time.Duration{"old": -3, "newest": 0, "mid": -1, "older": -4} {
		calls = append(calls, finishedCall(name, now.Add(minutes*time.Minute)))
	}
	var names []string
	for _, c := range beyond(calls, 2) {
		names = append(names, c.Name)
	}
	if diff := cmp.Diff([]string{"old", "older"}, names); diff != "" {
		t.Errorf("beyond (-want +got):\n%s", diff)
	}
	if got := beyond(calls, 0); got != nil {
		t.Errorf("limit 0 deletes %d calls", len(got))
	}
}
