package warmpool

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/google/go-cmp/cmp"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// warmTestTool is a Tool "echo" in namespace agents, changed by mut.
func warmTestTool(mut func(*toolgatev1alpha1.ToolSpec)) *toolgatev1alpha1.Tool {
	tool := &toolgatev1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "agents"}}
	tool.Spec.Timeout = &metav1.Duration{Duration: time.Minute}
	tool.Spec.Body = toolgatev1alpha1.ToolBody{Image: "example/echo:1", Command: []string{"/echo"}}
	if mut != nil {
		mut(&tool.Spec.ToolSpec)
	}
	return tool
}

func TestWarmPodPassesPodSecurityRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	level := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
	for name, tool := range map[string]*toolgatev1alpha1.Tool{
		"init-container":  warmTestTool(nil),
		"runner-in-image": warmTestTool(func(s *toolgatev1alpha1.ToolSpec) { s.Body.RunnerInImage = true }),
		"scratch-none": warmTestTool(func(s *toolgatev1alpha1.ToolSpec) {
			s.Body.RunnerInImage, s.Sandbox.Scratch = true, toolgatev1alpha1.ScratchNone
		}),
	} {
		pod := BuildPod(ToolPool(tool, 1), podspec.DefaultOptions())
		for _, r := range evaluator.EvaluatePod(level, &pod.ObjectMeta, &pod.Spec) {
			if !r.Allowed {
				t.Errorf("%s: restricted profile forbids: %s: %s", name, r.ForbiddenReason, r.ForbiddenDetail)
			}
		}
	}
}

func TestWarmTemplateDigest(t *testing.T) {
	opts := podspec.DefaultOptions()
	a := warmTestTool(nil)
	b := warmTestTool(nil)
	b.Spec.WarmPool = &toolgatev1alpha1.WarmPool{Size: 5}
	if podspec.WarmTemplateDigest(&a.Spec.ToolSpec, opts) != podspec.WarmTemplateDigest(&b.Spec.ToolSpec, opts) {
		t.Error("resizing the pool must not change the template")
	}
	c := warmTestTool(func(s *toolgatev1alpha1.ToolSpec) { s.Body.Command = []string{"/other"} })
	if podspec.WarmTemplateDigest(&a.Spec.ToolSpec, opts) == podspec.WarmTemplateDigest(&c.Spec.ToolSpec, opts) {
		t.Error("a body change must change the template")
	}
	opts2 := opts
	opts2.RunAsUser = 1000
	if podspec.WarmTemplateDigest(&a.Spec.ToolSpec, opts) == podspec.WarmTemplateDigest(&a.Spec.ToolSpec, opts2) {
		t.Error("an operator Pod setting change must change the template")
	}
	if got := len(BuildPod(ToolPool(a, 1), opts).Labels[podcontract.LabelTemplate]); got != 32 {
		t.Errorf("template label length %d", got)
	}
}

func TestClaimDeadline(t *testing.T) {
	spec := &toolgatev1alpha1.ToolSpec{Timeout: &metav1.Duration{Duration: 2 * time.Second}}
	now := time.Now()
	pod := &corev1.Pod{Status: corev1.PodStatus{StartTime: &metav1.Time{Time: now.Add(-90500 * time.Millisecond)}}}
	if got := ClaimDeadline(pod, spec, now); got != 91+2 {
		t.Errorf("deadline %d, want 93 (91 s run, rounded up, + 2 s timeout)", got)
	}
	if got := ClaimDeadline(&corev1.Pod{}, spec, now); got != 2 {
		t.Errorf("deadline without a start time %d, want 2", got)
	}
}

// A ClusterTool's pool Pod is the same in every namespace (as its cold Pods are: nothing of
// the Pod depends on the namespace), of the Tool's template for the same spec, and owned
// and labelled so that only that ClusterTool's calls claim it.
func TestClusterToolPoolPodIsTheSameInEveryNamespace(t *testing.T) {
	tool := warmTestTool(nil)
	ct := &toolgatev1alpha1.ClusterTool{ObjectMeta: metav1.ObjectMeta{Name: "echo"}, Spec: tool.Spec.ToolSpec}
	opts := podspec.DefaultOptions()
	a := BuildPod(ClusterToolPool(ct, "team-a", 1), opts)
	b := BuildPod(ClusterToolPool(ct, "team-b", 1), opts)
	if a.Namespace != "team-a" || b.Namespace != "team-b" {
		t.Fatalf("namespaces %q %q", a.Namespace, b.Namespace)
	}
	if d := cmp.Diff(a.Spec, b.Spec); d != "" {
		t.Errorf("a ClusterTool's pool Pod differs between namespaces:\n%s", d)
	}
	if d := cmp.Diff(a.Labels, b.Labels); d != "" {
		t.Errorf("labels differ between namespaces:\n%s", d)
	}
	if d := cmp.Diff(a.Spec, BuildPod(ToolPool(tool, 1), opts).Spec); d != "" {
		t.Errorf("a ClusterTool's pool Pod differs from a Tool's of the same spec:\n%s", d)
	}
}

func TestPoolCondition(t *testing.T) {
	ok := poolCondition(3, []string{"team-a"}, nil)
	if ok.Status != metav1.ConditionTrue || ok.Reason != toolgatev1alpha1.ReasonPoolKept || ok.ObservedGeneration != 3 {
		t.Errorf("all present: %+v", ok)
	}
	miss := poolCondition(3, []string{"team-a", "team-b", "team-c"}, []string{"team-b", "team-c"})
	if miss.Status != metav1.ConditionFalse || miss.Reason != toolgatev1alpha1.ReasonNamespaceMissing || !strings.Contains(miss.Message, "team-b, team-c") {
		t.Errorf("missing: %+v", miss)
	}
	if none := poolCondition(3, nil, nil); none.Status != metav1.ConditionFalse || !strings.Contains(none.Message, "lists no namespace") {
		t.Errorf("none listed: %+v", none)
	}
}
