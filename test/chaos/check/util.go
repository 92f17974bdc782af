package check

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// name renders a call id (uid or namespace/name) as namespace/name when the call is known.
func (c *checker) name(id string) string {
	if n, ok := c.names[id]; ok {
		return n
	}
	return id
}

func outcomeKey(phase v1alpha1.ToolCallPhase, reason string) string {
	if reason == "" {
		return string(phase)
	}
	return string(phase) + "/" + reason
}

func expected(e Expectation) string {
	if len(e.Reasons) == 0 {
		return string(e.Phase)
	}
	return string(e.Phase) + "/" + strings.Join(e.Reasons, "|")
}

func describe(r *v1alpha1.ToolResult) string {
	if r == nil {
		return "none"
	}
	content := ""
	if r.Content != nil {
		content = string(r.Content.Raw)
		if len(content) > 64 {
			content = content[:64] + "…"
		}
	}
	return fmt.Sprintf("{ok=%t isError=%t reason=%q content=%s}", r.OK, r.IsError, r.Reason, content)
}

func conditionReason(c *metav1.Condition) string {
	if c == nil {
		return "absent"
	}
	return c.Reason
}

// lastCondition summarises where a call that did not end stopped.
func lastCondition(call *v1alpha1.ToolCall) string {
	var latest *metav1.Condition
	for i := range call.Status.Conditions {
		c := &call.Status.Conditions[i]
		if latest == nil || !c.LastTransitionTime.Before(&latest.LastTransitionTime) {
			latest = c
		}
	}
	if latest == nil {
		return "no conditions"
	}
	return fmt.Sprintf("last condition %s=%s %s: %s", latest.Type, latest.Status, latest.Reason, latest.Message)
}

func sortedKeys(m map[types.NamespacedName]Expectation) []types.NamespacedName {
	return slices.SortedFunc(maps.Keys(m), func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

func sortedAttempts[V any](m map[attemptKey]V) []attemptKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b attemptKey) int {
		return cmp.Or(cmp.Compare(a.call, b.call), cmp.Compare(a.attempt, b.attempt))
	})
}

func sortedSet(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
