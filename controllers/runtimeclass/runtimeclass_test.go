package runtimeclass

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
)

// A call whose body would run under another runtime than its scope requires is denied with
// a sentence for the model that names neither the scope nor a class; the operator's default
// counts as the tool's runtime.
func TestAdmit(t *testing.T) {
	idx := pipeline.NewIndex(nil, nil, []pipeline.Scope{{Name: "sandboxed", RuntimeClassName: "gvisor"}})
	call := func(scope string) *v1alpha1.ToolCall {
		return &v1alpha1.ToolCall{Spec: v1alpha1.ToolCallSpec{Scope: scope, Tool: "echo"}}
	}
	plain, gvisor := &v1alpha1.ToolSpec{}, &v1alpha1.ToolSpec{Sandbox: v1alpha1.Sandbox{RuntimeClassName: ptr.To("gvisor")}}
	for _, tc := range []struct {
		name     string
		f        Feature
		scope    string
		spec     *v1alpha1.ToolSpec
		verdict  pipeline.Verdict
		reason   pipeline.Reason
		feedback string
	}{
		{"no scope", Feature{}, "", plain, pipeline.Allow, "", ""},
		{"the scope's class", Feature{}, "sandboxed", gvisor, pipeline.Allow, "", ""},
		{"the operator's default", Feature{Options: podspec.Options{DefaultRuntimeClassName: "gvisor"}}, "sandboxed", plain, pipeline.Allow, "", ""},
		{"the node's runtime", Feature{}, "sandboxed", plain, pipeline.Deny, pipeline.ReasonRuntimeClassRequired, requiredMessage},
		{"an unknown scope", Feature{}, "missing", plain, pipeline.Deny, pipeline.ReasonUnknownScope, ""},
	} {
		d := feature.List{tc.f}.Admit(feature.Admission{Index: idx, Call: call(tc.scope), Spec: tc.spec})
		if d.Verdict != tc.verdict || (tc.reason != "" && d.Reason != tc.reason) || d.Feedback != tc.feedback {
			t.Errorf("%s: %+v", tc.name, d)
		}
		if strings.Contains(d.Feedback, "sandboxed") || strings.Contains(d.Feedback, "gvisor") {
			t.Errorf("%s: the model's sentence names host configuration: %q", tc.name, d.Feedback)
		}
	}
}
