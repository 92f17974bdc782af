package cli

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// pipelineOrder is the order of a ToolCall's conditions in the pipeline; it breaks ties
// between conditions written in the same status write (timestamps have second precision).
var pipelineOrder = []string{
	v1alpha1.ConditionResolved, v1alpha1.ConditionArgumentsFrozen, v1alpha1.ConditionArgumentsValid,
	v1alpha1.ConditionAdmitted, v1alpha1.ConditionGuarded, v1alpha1.ConditionExecuted,
	v1alpha1.ConditionResultAccepted, v1alpha1.ConditionNormalized, v1alpha1.ConditionCompleted,
}

// timelineRows lays a call's conditions out in time from its creation: AT (since created),
// DELTA (since the row before), CONDITION, STATUS, REASON, MESSAGE; the first row is the
// creation itself.
func timelineRows(created time.Time, conds []metav1.Condition) [][]string {
	sorted := slices.Clone(conds)
	slices.SortStableFunc(sorted, func(a, b metav1.Condition) int {
		if c := a.LastTransitionTime.Compare(b.LastTransitionTime.Time); c != 0 {
			return c
		}
		return rank(a.Type) - rank(b.Type)
	})
	rows := [][]string{{"+0s", "", "Created", "", "", ""}}
	prev := created
	for _, c := range sorted {
		at := c.LastTransitionTime.Time
		rows = append(rows, []string{"+" + formatOffset(at.Sub(created)), "+" + formatOffset(at.Sub(prev)),
			c.Type, string(c.Status), c.Reason, firstLine(c.Message)})
		prev = at
	}
	return rows
}

// rank is a condition type's place in the pipeline; unknown types come last.
func rank(condType string) int {
	if i := slices.Index(pipelineOrder, condType); i >= 0 {
		return i
	}
	return len(pipelineOrder)
}

// formatOffset renders a duration to the second ("0s", "12s", "1m5s"); negative (clock
// skew) is 0s.
func formatOffset(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}

// timeline is the Timeline section's table.
func timeline(created time.Time, conds []metav1.Condition) string {
	return table([]string{"AT", "DELTA", "CONDITION", "STATUS", "REASON", "MESSAGE"}, timelineRows(created, conds))
}
