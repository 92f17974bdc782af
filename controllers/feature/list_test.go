package feature_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/internal/podspec"
)

// fake is a feature used by tools whose image is its name; it records the hooks run.
type fake struct {
	name  feature.Name
	ran   *[]string
	stop  bool
	retry time.Duration
}

func (f fake) Name() feature.Name { return f.name }
func (f fake) Uses(spec *v1alpha1.ToolSpec) bool {
	return spec.Body.Image == string(f.name) || spec.Body.Image == "all"
}
func (f fake) Running(context.Context, *v1alpha1.ToolCall, *corev1.Pod) time.Duration { return f.retry }
func (f fake) PrepareInput(_ context.Context, _ *v1alpha1.ToolCall, _ int32, _ *podspec.Input) (executor.Step, bool, error) {
	*f.ran = append(*f.ran, string(f.name))
	if f.stop {
		return executor.Refuse(executor.Refusal{Reason: string(f.name)}), false, nil
	}
	return executor.Step{}, true, nil
}

func callOf(image string) *v1alpha1.ToolCall {
	return &v1alpha1.ToolCall{Status: v1alpha1.ToolCallStatus{Tool: &v1alpha1.ToolSnapshot{Spec: &v1alpha1.ToolSpec{Body: v1alpha1.ToolBody{Image: image}}}}}
}

// The loops run only the features the call's tool uses, in order, and stop at the first
// that is not ok; Running asks again as soon as the soonest feature wants.
func TestListRunsTheUsedFeatures(t *testing.T) {
	var ran []string
	l := feature.List{fake{name: "a", ran: &ran, retry: 3 * time.Second}, fake{name: "b", ran: &ran, stop: true, retry: time.Second}, fake{name: "c", ran: &ran}}
	if _, ok, _ := l.PrepareInput(context.Background(), callOf("a"), 1, &podspec.Input{}); !ok || len(ran) != 1 || ran[0] != "a" {
		t.Errorf("a tool using a: ok %v, ran %v", ok, ran)
	}
	ran = nil
	st, ok, _ := l.PrepareInput(context.Background(), callOf("all"), 1, &podspec.Input{})
	if ok || st.Refused == nil || st.Refused.Reason != "b" || len(ran) != 2 {
		t.Errorf("a tool using all: ok %v, step %+v, ran %v: want b's refusal, c not run", ok, st, ran)
	}
	if got := l.Running(context.Background(), callOf("all"), &corev1.Pod{}); got != time.Second {
		t.Errorf("Running %v, want the soonest, 1s", got)
	}
	if got := l.Running(context.Background(), callOf("c"), &corev1.Pod{}); got != 0 {
		t.Errorf("Running %v for a tool whose feature asks nothing", got)
	}
	if got := l.Used(callOf("all").Status.Tool.Spec); len(got) != 3 || (feature.Set{"a"}).Missing(got) != "b" {
		t.Errorf("Used %v", got)
	}
}
