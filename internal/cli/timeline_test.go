package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

func TestTimelineRows(t *testing.T) {
	cases := []struct {
		name  string
		conds []metav1.Condition
		want  [][]string
	}{
		{name: "a call the operator has not seen", want: [][]string{{"+0s", "", "Created", "", "", ""}}},
		{
			name: "same-second conditions keep pipeline order, whatever the list order",
			conds: []metav1.Condition{
				cond(v1alpha1.ConditionCompleted, metav1.ConditionTrue, "Succeeded", "", 75),
				cond(v1alpha1.ConditionAdmitted, metav1.ConditionTrue, "Approved", "approved by bob", 70),
				cond(v1alpha1.ConditionArgumentsFrozen, metav1.ConditionTrue, "Frozen", "", 1),
				cond(v1alpha1.ConditionResolved, metav1.ConditionTrue, "Resolved", "Tool echo\nsecond line", 1),
				cond(v1alpha1.ConditionExecuted, metav1.ConditionTrue, "Succeeded", "ran", 75),
			},
			want: [][]string{
				{"+0s", "", "Created", "", "", ""},
				{"+1s", "+1s", "Resolved", "True", "Resolved", "Tool echo"},
				{"+1s", "+0s", "ArgumentsFrozen", "True", "Frozen", ""},
				{"+1m10s", "+1m9s", "Admitted", "True", "Approved", "approved by bob"},
				{"+1m15s", "+5s", "Executed", "True", "Succeeded", "ran"},
				{"+1m15s", "+0s", "Completed", "True", "Succeeded", ""},
			},
		},
		{
			name:  "unknown condition types come last; clock skew is 0s",
			conds: []metav1.Condition{cond("Custom", metav1.ConditionTrue, "X", "", -3), cond(v1alpha1.ConditionResolved, metav1.ConditionTrue, "Resolved", "", -3)},
			want: [][]string{
				{"+0s", "", "Created", "", "", ""},
				{"+0s", "+0s", "Resolved", "True", "Resolved", ""},
				{"+0s", "+0s", "Custom", "True", "X", ""},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, timelineRows(t0, tc.conds)); diff != "" {
				t.Errorf("timelineRows (-want +got):\n%s", diff)
			}
		})
	}
}
