package podspec

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

func TestJobNameDeterministicAndBounded(t *testing.T) {
	long := strings.Repeat("a", 250)
	cases := []struct {
		call    string
		attempt int32
		want    string
	}{
		{"hello", 1, "hello-1"},
		{"hello", 2, "hello-2"},
		{strings.Repeat("b", 61), 1, strings.Repeat("b", 61) + "-1"},
	}
	for _, tc := range cases {
		if got := JobName(tc.call, tc.attempt); got != tc.want {
			t.Errorf("JobName(%q,%d) = %q, want %q", tc.call, tc.attempt, got, tc.want)
		}
	}
	a, b := JobName(long, 3), JobName(long, 3)
	if a != b || len(a) > 63 {
		t.Fatalf("long name: %q (len %d) not deterministic or too long", a, len(a))
	}
	if JobName(long, 3) == JobName(long+"x", 3) {
		t.Fatal("distinct long names collide")
	}
	if errs := validation.IsDNS1123Label(a); len(errs) > 0 {
		t.Fatalf("job name %q is not a DNS label: %v", a, errs)
	}
	if errs := validation.IsValidLabelValue(CallLabelValue(long)); len(errs) > 0 {
		t.Fatalf("call label invalid: %v", errs)
	}
}

// TestBuildJobLabelsValidForEveryName builds Jobs for tool and call names that are valid in
// the API but not as label values, and checks what the API server checks: every label is a
// valid label, the Job's name a DNS subdomain, and the exact names are in annotations.
func TestBuildJobLabelsValidForEveryName(t *testing.T) {
	cases := []struct{ name, tool, call string }{
		{"plain", "echo", "hello"},
		{"leading underscore", "_probe", "hello"},
		{"trailing dash", "probe-", "hello"},
		{"only punctuation", "_-_", "hello"},
		{"64 characters", strings.Repeat("t", 64), "hello"},
		{"64 with underscore ends", "_" + strings.Repeat("t", 62) + "_", "hello"},
		{"long call name", "echo", strings.Repeat("c", 200)},
		{"long call cut at a dot", "echo", strings.Repeat("c", 51) + "." + strings.Repeat("d", 100)},
		{"long call cut at a dash", "echo", strings.Repeat("c", 51) + "-" + strings.Repeat("d", 100)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := testJobInput(nil)
			in.Call.Spec.Tool, in.Call.Name = tc.tool, tc.call
			for attempt := int32(1); attempt <= 10; attempt++ {
				in.Attempt = attempt
				job := BuildJob(in, DefaultOptions())
				if errs := validation.IsDNS1123Subdomain(job.Name); len(errs) > 0 || len(job.Name) > 63 {
					t.Fatalf("job name %q: %v", job.Name, errs)
				}
				for _, set := range []map[string]string{job.Labels, job.Spec.Template.Labels} {
					for k, v := range set {
						if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
							t.Errorf("label %s=%q: %v", k, v, errs)
						}
					}
				}
				if job.Annotations[podcontract.AnnotationTool] != tc.tool || job.Annotations[podcontract.AnnotationCallName] != tc.call {
					t.Errorf("annotations %v do not carry the exact names", job.Annotations)
				}
			}
		})
	}
}

func TestToolLabelValueKeepsValidNamesAndNeverCollides(t *testing.T) {
	if got := ToolLabelValue("echo_2"); got != "echo_2" {
		t.Errorf("a valid label value is kept: got %q", got)
	}
	seen := map[string]string{}
	for _, tool := range []string{"_probe", "probe_", "-probe", "probe", "_probe_", strings.Repeat("a", 64), strings.Repeat("a", 63) + "b"} {
		v := ToolLabelValue(tool)
		if prev, ok := seen[v]; ok {
			t.Errorf("%q and %q share the label value %q", prev, tool, v)
		}
		seen[v] = tool
		if v != tool && !strings.Contains(v, ".") {
			t.Errorf("hashed value %q has no '.', so it could equal a real tool name", v)
		}
	}
	if got := ToolLabelValue("_probe"); !strings.HasPrefix(got, "probe.") {
		t.Errorf("ToolLabelValue(_probe) = %q, want a readable prefix", got)
	}
}
