package catalog

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

func TestPolicySpecAndRetryPolicy(t *testing.T) {
	p := &v1alpha1.ToolPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1alpha1.ToolPolicySpec{
		Stage: v1alpha1.StagePreExecute, Order: 3, Tools: []string{"sh"},
		ApprovalWindow: &metav1.Duration{Duration: time.Minute},
		Rules:          []v1alpha1.PolicyRule{{Name: "r", Expression: "true", Verdict: v1alpha1.VerdictAsk, Message: "m"}},
	}}
	want := pipeline.PolicySpec{Name: "p", Stage: pipeline.StagePreExecute, Order: 3, Tools: []string{"sh"},
		ApprovalWindow: time.Minute, Rules: []pipeline.Rule{{Name: "r", Expression: "true", Verdict: pipeline.Ask, Message: "m"}}}
	if diff := cmp.Diff(want, PolicySpec(p)); diff != "" {
		t.Errorf("PolicySpec (-want +got):\n%s", diff)
	}
	spec := &v1alpha1.ToolSpec{Retry: v1alpha1.RetryPolicy{MaxAttempts: 3, OnReasons: []string{"OOMKilled"}}}
	if diff := cmp.Diff(pipeline.RetryPolicy{MaxAttempts: 3, OnReasons: []pipeline.Reason{pipeline.ReasonOOMKilled}}, RetryPolicy(spec)); diff != "" {
		t.Errorf("RetryPolicy (-want +got):\n%s", diff)
	}
}

// The snapshot a call keeps is found through the index (the same lookup the catalogue
// lists with), keeps the spec as a copy and drops kubectl's copy of it.
func TestSnapshotThroughTheIndex(t *testing.T) {
	l := &Lists{}
	l.Tools.Items = []v1alpha1.Tool{{
		ObjectMeta: metav1.ObjectMeta{Name: "grep-v2", Generation: 4, Annotations: map[string]string{
			"risk": "high", corev1.LastAppliedConfigAnnotation: "{}"}},
		Spec: v1alpha1.NamespacedToolSpec{Scope: "team", ToolSpec: v1alpha1.ToolSpec{Name: "grep"}},
	}}
	l.Scopes.Items = []v1alpha1.ToolScope{{ObjectMeta: metav1.ObjectMeta{Name: "team"}}}
	l.Cluster.Items = []v1alpha1.ClusterTool{{ObjectMeta: metav1.ObjectMeta{Name: "echo", Generation: 2}}}
	idx, objects := l.Index()
	for _, tc := range []struct {
		scope, name string
		want        v1alpha1.ToolSnapshot
	}{
		{"team", "grep", v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "grep-v2", Scope: "team", Generation: 4,
			Annotations: map[string]string{"risk": "high"}, Spec: &v1alpha1.ToolSpec{Name: "grep"}}},
		{"", "echo", v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindClusterTool, Name: "echo", Generation: 2, Spec: &v1alpha1.ToolSpec{}}},
	} {
		found, err := idx.Resolve(tc.scope, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		v := objects.Lookup(found)
		snap := Snapshot(v, found.SpecDigest)
		tc.want.SpecDigest = found.SpecDigest
		if diff := cmp.Diff(&tc.want, snap); diff != "" {
			t.Errorf("%s: snapshot (-want +got):\n%s", tc.name, diff)
		}
		if snap.Spec == v.Spec {
			t.Errorf("%s: the snapshot shares the object's spec", tc.name)
		}
	}
	call := &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"},
		Spec:   v1alpha1.ToolCallSpec{Requester: "alice", Arguments: runtime.RawExtension{Raw: []byte(`{}`)}},
		Status: v1alpha1.ToolCallStatus{Tool: Snapshot(objects.Lookup(mustResolve(t, idx, "team", "grep")), ""), CallLabels: map[string]string{"a": "b"}}}
	in := CallInput(call, nil)
	if in.Tool.Name != "grep" || in.Tool.Scope != "team" || in.Tool.Annotations["risk"] != "high" || in.Call.Labels["a"] != "b" || in.Call.Requester != "alice" {
		t.Errorf("input %+v", in)
	}
}

func mustResolve(t *testing.T, idx *pipeline.Index, scope, name string) pipeline.Registration {
	t.Helper()
	found, err := idx.Resolve(scope, name)
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// Policies see a tool's sandbox.egress.allow as tool.egress, so a platform can ask for
// approval of tools that reach a given host.
func TestCallInputEgress(t *testing.T) {
	spec := &v1alpha1.ToolSpec{Sandbox: v1alpha1.Sandbox{Network: v1alpha1.NetworkEgress, Egress: &v1alpha1.Egress{
		Allow: []v1alpha1.EgressRule{{Host: "api.example.com", Port: 443}, {Host: "*.corp.example", Port: 8443}}}}}
	call := &v1alpha1.ToolCall{Status: v1alpha1.ToolCallStatus{Tool: &v1alpha1.ToolSnapshot{Name: "fetch", Spec: spec}}}
	want := []pipeline.HostPort{{Host: "api.example.com", Port: 443}, {Host: "*.corp.example", Port: 8443}}
	if diff := cmp.Diff(want, CallInput(call, nil).Tool.Egress); diff != "" {
		t.Errorf("tool.egress (-want +got):\n%s", diff)
	}
	c, err := pipeline.NewCompiler(pipeline.CompilerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pol := c.CompilePolicy(pipeline.PolicySpec{Name: "egress-needs-approval", Stage: pipeline.StagePreExecute, Rules: []pipeline.Rule{{
		Name: "corp", Expression: `tool.egress.exists(e, e.host.endsWith(".corp.example"))`, Verdict: pipeline.Ask}}})
	if d := pipeline.PreExecute([]*pipeline.Policy{pol}, CallInput(call, nil)); d.Verdict != pipeline.Ask {
		t.Errorf("a tool reaching *.corp.example: verdict %v, want Ask (%+v)", d.Verdict, d)
	}
	spec.Sandbox.Egress = nil
	if d := pipeline.PreExecute([]*pipeline.Policy{pol}, CallInput(call, nil)); d.Verdict != pipeline.Allow {
		t.Errorf("a tool without egress: verdict %v, want Allow (%+v)", d.Verdict, d)
	}
}

// Policies see which credentials a tool holds (tool.credentials: names, never values), so a
// platform can ask for approval of a tool that holds a production token.
func TestCallInputCredentials(t *testing.T) {
	spec := &v1alpha1.ToolSpec{Body: v1alpha1.ToolBody{
		Env: []v1alpha1.EnvVar{{Name: "MODE", Value: "fast"},
			{Name: "GITHUB_TOKEN", ValueFrom: &v1alpha1.EnvVarSource{SecretKeyRef: v1alpha1.CredentialKeySelector{Name: "github-prod", Key: "token"}}}},
		SecretFiles: []v1alpha1.SecretFile{{Name: "kubeconfig", SecretKeyRef: v1alpha1.CredentialKeySelector{Name: "deploy", Key: "config"}}},
	}, Sandbox: v1alpha1.Sandbox{Network: v1alpha1.NetworkEgress, Egress: &v1alpha1.Egress{Allow: []v1alpha1.EgressRule{
		{Host: "api.github.com", Port: 443, Credential: &v1alpha1.EgressCredential{SecretKeyRef: v1alpha1.CredentialKeySelector{Name: "github-proxy", Key: "token"}}},
		{Host: "other.test", Port: 443},
	}}}}
	call := &v1alpha1.ToolCall{Status: v1alpha1.ToolCallStatus{Tool: &v1alpha1.ToolSnapshot{Name: "gh", Spec: spec}}}
	want := []pipeline.Credential{
		{Name: "GITHUB_TOKEN", Secret: "github-prod", Key: "token", As: CredentialAsEnv},
		{Name: "kubeconfig", Secret: "deploy", Key: "config", As: CredentialAsFile},
		{Name: "api.github.com:443", Secret: "github-proxy", Key: "token", As: CredentialAsProxy},
	}
	if diff := cmp.Diff(want, CallInput(call, nil).Tool.Credentials); diff != "" {
		t.Errorf("tool.credentials (-want +got):\n%s", diff)
	}
	c, err := pipeline.NewCompiler(pipeline.CompilerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pol := c.CompilePolicy(pipeline.PolicySpec{Name: "prod-token-needs-approval", Stage: pipeline.StagePreExecute, Rules: []pipeline.Rule{{
		Name: "prod", Expression: `tool.credentials.exists(c, c.secret.endsWith("-prod"))`, Verdict: pipeline.Ask}}})
	if d := pipeline.PreExecute([]*pipeline.Policy{pol}, CallInput(call, nil)); d.Verdict != pipeline.Ask {
		t.Errorf("a tool holding a -prod token: verdict %v, want Ask (%+v)", d.Verdict, d)
	}
	spec.Body = v1alpha1.ToolBody{Env: []v1alpha1.EnvVar{{Name: "MODE", Value: "fast"}}}
	if d := pipeline.PreExecute([]*pipeline.Policy{pol}, CallInput(call, nil)); d.Verdict != pipeline.Allow {
		t.Errorf("a tool without credentials: verdict %v, want Allow (%+v)", d.Verdict, d)
	}
}
