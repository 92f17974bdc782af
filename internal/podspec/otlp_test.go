package podspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

const testOTLPEndpoint = "http://198.51.100.1:4318"

// envValues is every value a container's env gives each name, in order.
func envValues(env []corev1.EnvVar) map[string][]string {
	out := map[string][]string{}
	for _, e := range env {
		out[e.Name] = append(out[e.Name], e.Value)
	}
	return out
}

// The tool endpoint reaches every body, cold and warm, through the standard OTLP variables;
// without one there are none; a Tool that sets its own keeps it.
func TestToolOTLPEnvColdAndWarm(t *testing.T) {
	with := DefaultOptions()
	with.ToolOTLPEndpoint = testOTLPEndpoint
	paths := map[string]func(Input, Options) []corev1.EnvVar{
		"cold": func(in Input, o Options) []corev1.EnvVar {
			return toolIn(BuildJob(in, o).Spec.Template.Spec).Env
		},
		"warm": func(in Input, o Options) []corev1.EnvVar {
			return toolIn(WarmPodSpec(in.Tool, o)).Env
		},
	}
	for name, env := range paths {
		got := envValues(env(testJobInput(nil), with))
		if v := got[podcontract.EnvOTLPEndpoint]; len(v) != 1 || v[0] != testOTLPEndpoint {
			t.Errorf("%s: %s = %q, want [%s]", name, podcontract.EnvOTLPEndpoint, v, testOTLPEndpoint)
		}
		if v := got[podcontract.EnvOTLPProtocol]; len(v) != 1 || v[0] != "http/protobuf" {
			t.Errorf("%s: %s = %q, want [http/protobuf]", name, podcontract.EnvOTLPProtocol, v)
		}
		if got["MODE"] == nil {
			t.Errorf("%s: the Tool's own env is gone: %v", name, got)
		}

		off := envValues(env(testJobInput(nil), DefaultOptions()))
		if off[podcontract.EnvOTLPEndpoint] != nil || off[podcontract.EnvOTLPProtocol] != nil {
			t.Errorf("%s: no tool endpoint, yet %v", name, off)
		}

		own := testJobInput(func(s *toolgatev1alpha1.ToolSpec) {
			s.Body.Env = append(s.Body.Env, toolgatev1alpha1.EnvVar{Name: podcontract.EnvOTLPEndpoint, Value: "https://mine.example:4318"})
		})
		got = envValues(env(own, with))
		if v := got[podcontract.EnvOTLPEndpoint]; len(v) != 1 || v[0] != "https://mine.example:4318" {
			t.Errorf("%s: a Tool's own %s must stay the only one: %q", name, podcontract.EnvOTLPEndpoint, v)
		}
		if v := got[podcontract.EnvOTLPProtocol]; len(v) != 1 {
			t.Errorf("%s: %s = %q", name, podcontract.EnvOTLPProtocol, v)
		}
	}
}

// A dollar in the endpoint reaches the body as written (no kubelet expansion).
func TestToolOTLPEnvIsLiteral(t *testing.T) {
	o := DefaultOptions()
	o.ToolOTLPEndpoint = "http://collector:4318/$(HOME)"
	v := envValues(toolIn(BuildJob(testJobInput(nil), o).Spec.Template.Spec).Env)[podcontract.EnvOTLPEndpoint]
	if len(v) != 1 || v[0] != "http://collector:4318/$$(HOME)" {
		t.Fatalf("%s = %q", podcontract.EnvOTLPEndpoint, v)
	}
}

// Idle warm Pods are built for one endpoint: another (or none) is another template, so
// the pool replaces them and no call claims a Pod that exports elsewhere.
func TestWarmTemplateDigestCoversToolOTLPEndpoint(t *testing.T) {
	spec := testJobInput(nil).Tool
	a, b := DefaultOptions(), DefaultOptions()
	b.ToolOTLPEndpoint = testOTLPEndpoint
	c := b
	c.ToolOTLPEndpoint = "http://203.0.113.7:4318"
	da, db, dc := WarmTemplateDigest(spec, a), WarmTemplateDigest(spec, b), WarmTemplateDigest(spec, c)
	if da == db || db == dc || da == dc {
		t.Fatalf("digests none %s, one endpoint %s, another %s: must all differ", da, db, dc)
	}
	if db != WarmTemplateDigest(spec, b) {
		t.Fatal("the digest of one endpoint must be stable")
	}
}
