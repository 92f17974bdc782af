package toolgatetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// counter counts up by step on each read, to at most limit.
func counter(step, limit int) func(context.Context) (int, error) {
	n := 0
	return func(context.Context) (int, error) {
		n = min(n+step, limit)
		return n, nil
	}
}

func TestWaitDrainedWaitsAsLongAsTheCountRises(t *testing.T) {
	// 40 polls at Interval take far longer than the stall bound: only a pause fails.
	if err := WaitDrained(context.Background(), 40, 2*Interval, counter(1, 40)); err != nil {
		t.Fatalf("a burst that keeps draining: %v", err)
	}
}

func TestWaitDrainedFailsWhenTheCountStops(t *testing.T) {
	err := WaitDrained(context.Background(), 10, 3*Interval, counter(1, 4))
	if err == nil || !strings.Contains(err.Error(), "4 of 10 done, then no progress for") {
		t.Fatalf("a burst stuck at 4 of 10: %v", err)
	}
	boom := errors.New("list failed")
	err = WaitDrained(context.Background(), 1, 2*Interval, func(context.Context) (int, error) { return 0, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("a count that keeps failing: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WaitDrained(ctx, 1, LongTimeout, counter(0, 0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("an ended context: %v", err)
	}
}

func TestMakeRefusal(t *testing.T) {
	policy, binding := MakeRefusal("no-jobs", "batch", "jobs", "no Jobs here").Reason(metav1.StatusReasonForbidden).
		InNamespace("team").ObjectLabels(map[string]string{"tool": "x"}).Labels(map[string]string{"suite": "e2e"}).Objs()
	rule := policy.Spec.MatchConstraints.ResourceRules[0].Rule
	v := policy.Spec.Validations[0]
	switch {
	case policy.Name != "no-jobs" || binding.Name != "no-jobs" || binding.Spec.PolicyName != "no-jobs":
		t.Errorf("names: policy %q, binding %q for %q", policy.Name, binding.Name, binding.Spec.PolicyName)
	case rule.APIGroups[0] != "batch" || rule.Resources[0] != "jobs" || rule.APIVersions[0] != "v1":
		t.Errorf("rule: %+v", rule)
	case v.Expression != "false" || v.Message != "no Jobs here" || v.Reason == nil || *v.Reason != metav1.StatusReasonForbidden:
		t.Errorf("validation: %+v", v)
	case binding.Spec.MatchResources.NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != "team" ||
		binding.Spec.MatchResources.ObjectSelector.MatchLabels["tool"] != "x":
		t.Errorf("binding selectors: %+v", binding.Spec.MatchResources)
	case policy.Labels["suite"] != "e2e" || binding.Labels["suite"] != "e2e":
		t.Errorf("labels: %v, %v", policy.Labels, binding.Labels)
	}
	if p, b := MakeRefusal("no-pods", "", "pods", "m").Objs(); p.Spec.Validations[0].Reason != nil || b.Spec.MatchResources != nil {
		t.Errorf("defaults: reason %v, match %+v", p.Spec.Validations[0].Reason, b.Spec.MatchResources)
	}
}
