package warmpool

import (
	"testing"

	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// A session pool Pod's template names the session CA: the Pods of another operator process
// (whose CA this one cannot reach) are of another template, retired and never claimed. Its
// Secret's name (the Pod's) is not in it, and a Tool edit changes it.
func TestSessionTemplateDigest(t *testing.T) {
	opts := podspec.DefaultOptions()
	tool := warmTestTool(nil)
	d := SessionTemplateDigest(&tool.Spec.ToolSpec, opts, "ca-1")
	if d == SessionTemplateDigest(&tool.Spec.ToolSpec, opts, "ca-2") {
		t.Error("another CA gives the same template")
	}
	if d == podspec.WarmTemplateDigest(&tool.Spec.ToolSpec, opts) {
		t.Error("a session pool Pod has the warm Pods' template: the warm executor would claim it")
	}
	edited := warmTestTool(func(s *toolgatev1alpha1.ToolSpec) { s.Body.Image = "example/echo:2" })
	if d == SessionTemplateDigest(&edited.Spec.ToolSpec, opts, "ca-1") {
		t.Error("a Tool edit gives the same template")
	}
	a, b := buildSessionPod(ToolPool(tool, 1), opts, "ca-1"), buildSessionPod(ToolPool(tool, 1), opts, "ca-1")
	if a.Name == b.Name || a.Labels[podcontract.LabelTemplate] != d || b.Labels[podcontract.LabelTemplate] != d {
		t.Errorf("two Pods %s %s, templates %s %s, want %s", a.Name, b.Name, a.Labels[podcontract.LabelTemplate], b.Labels[podcontract.LabelTemplate], d)
	}
	if why := PodSpecMismatch(&a.Spec, &b.Spec); why != "volumes differs" {
		t.Errorf("two Pods' specs differ by %q, want only their TLS Secret volume", why)
	}
}

// A session pool Pod passes the Pod Security restricted profile, as the session Pod it is.
func TestSessionPoolPodPassesPodSecurityRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	level := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
	pod := buildSessionPod(ToolPool(warmTestTool(nil), 1), podspec.DefaultOptions(), "ca-1")
	for _, r := range evaluator.EvaluatePod(level, &pod.ObjectMeta, &pod.Spec) {
		if !r.Allowed {
			t.Errorf("restricted profile forbids: %s: %s", r.ForbiddenReason, r.ForbiddenDetail)
		}
	}
}
