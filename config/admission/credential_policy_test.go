/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package admission_test

import (
	"bufio"
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/config/admission"
)

// credentialTool is a Tool naming a Secret, with every field set, as the API server stores it.
func credentialTool() *v1alpha1.Tool {
	return &v1alpha1.Tool{
		ObjectMeta: metav1.ObjectMeta{Name: "gh", Namespace: "team-a", Labels: map[string]string{"team": "a"}},
		Spec: v1alpha1.NamespacedToolSpec{Scope: "ci", ToolSpec: v1alpha1.ToolSpec{
			Name: "gh", Description: "GitHub", ReadOnly: true,
			Parameters:     &runtime.RawExtension{Raw: []byte(`{"type":"object","properties":{"repo":{"enum":["a/b"]}}}`)},
			Output:         &runtime.RawExtension{Raw: []byte(`{"type":"object"}`)},
			Timeout:        &metav1.Duration{Duration: time.Minute},
			Retry:          v1alpha1.RetryPolicy{MaxAttempts: 1},
			ApprovalWindow: &metav1.Duration{Duration: 15 * time.Minute},
			Body: v1alpha1.ToolBody{Image: "example/gh:1", Command: []string{"/gh"}, Args: []string{"issue"},
				Env: []v1alpha1.EnvVar{{Name: "MODE", Value: "quiet"}, {Name: "GITHUB_TOKEN",
					ValueFrom: &v1alpha1.EnvVarSource{SecretKeyRef: v1alpha1.CredentialKeySelector{Name: "github", Key: "token"}}}}},
			Sandbox:                     v1alpha1.Sandbox{Network: v1alpha1.NetworkNone, MaxOutputBytes: 1 << 20, Scratch: v1alpha1.ScratchEmptyDir},
			CallTTLSecondsAfterFinished: ptr.To[int32](3600),
			Presentation:                &v1alpha1.Presentation{Call: "'gh'"},
		}},
	}
}

// fieldChanges are, per JSON field of a Tool's spec, edits of a credentialled Tool and
// whether toolgate-credentials treats them as changing what runs with its Secret (or who
// may run it), so that the editor needs get on every Secret the tool names.
var fieldChanges = map[string][]struct {
	what   string
	edit   func(*v1alpha1.Tool)
	checks bool
}{
	"body": {
		{"image", func(t *v1alpha1.Tool) { t.Spec.Body.Image = "evil/gh:1" }, true},
		{"command", func(t *v1alpha1.Tool) { t.Spec.Body.Command = []string{"/bin/sh", "-c", "rev <<<$GITHUB_TOKEN"} }, true},
		{"args", func(t *v1alpha1.Tool) { t.Spec.Body.Args = []string{"dump"} }, true},
		{"an env literal", func(t *v1alpha1.Tool) { t.Spec.Body.Env[0].Value = "debug" }, true},
		{"workingDir", func(t *v1alpha1.Tool) { t.Spec.Body.WorkingDir = "/tmp" }, true},
		{"resources", func(t *v1alpha1.Tool) {
			t.Spec.Body.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}, true},
		{"runnerInImage and runnerPath", func(t *v1alpha1.Tool) { t.Spec.Body.RunnerInImage, t.Spec.Body.RunnerPath = true, "/r" }, true},
	},
	"sandbox": {
		{"network", func(t *v1alpha1.Tool) { t.Spec.Sandbox.Network = v1alpha1.NetworkEgress }, true},
		{"runtimeClassName", func(t *v1alpha1.Tool) { t.Spec.Sandbox.RuntimeClassName = ptr.To("runc") }, true},
		{"workspace", func(t *v1alpha1.Tool) { t.Spec.Sandbox.Workspace = v1alpha1.WorkspaceReadWrite }, true},
		{"an egress credential (where the proxy sends a value)", func(t *v1alpha1.Tool) { egressCredential(t, "collector.example", "github") }, true},
	},
	"parameters": {{"a wider schema", func(t *v1alpha1.Tool) { t.Spec.Parameters = nil }, true}},
	"output":     {{"a wider schema", func(t *v1alpha1.Tool) { t.Spec.Output.Raw = []byte(`{}`) }, true}},
	"warmPool":   {{"a pool of none", func(t *v1alpha1.Tool) { t.Spec.WarmPool = &v1alpha1.WarmPool{} }, true}},
	"name":       {{"another model-facing name", func(t *v1alpha1.Tool) { t.Spec.Name = "echo" }, true}},
	"scope":      {{"the namespace layer", func(t *v1alpha1.Tool) { t.Spec.Scope = "" }, true}},

	"description":     {{"a new description", func(t *v1alpha1.Tool) { t.Spec.Description = "GitHub, read-only" }, false}},
	"readOnly":        {{"the hint", func(t *v1alpha1.Tool) { t.Spec.ReadOnly = false }, false}},
	"presentation":    {{"how people see calls", func(t *v1alpha1.Tool) { t.Spec.Presentation.Call = "'gh ' + arguments.repo" }, false}},
	"timeout":         {{"a longer timeout", func(t *v1alpha1.Tool) { t.Spec.Timeout.Duration = time.Hour }, false}},
	"retry":           {{"more attempts", func(t *v1alpha1.Tool) { t.Spec.Retry.MaxAttempts = 3 }, false}},
	"approvalWindow":  {{"a longer window", func(t *v1alpha1.Tool) { t.Spec.ApprovalWindow.Duration = time.Hour }, false}},
	"concurrencySafe": {{"parallel calls", func(t *v1alpha1.Tool) { t.Spec.ConcurrencySafe = true }, false}},
	"callTTLSecondsAfterFinished": {{"a shorter retention", func(t *v1alpha1.Tool) {
		t.Spec.CallTTLSecondsAfterFinished = ptr.To[int32](60)
	}, false}},
}

// changesWhatRuns compiles the policy's changesWhatRuns variable with plain cel-go (the API
// server's CEL with optional types; the expression uses nothing Kubernetes adds).
func changesWhatRuns(t *testing.T) cel.Program {
	t.Helper()
	return policyProgram(t, "changesWhatRuns")
}

// policyProgram compiles the policy's variable or match condition of that name.
func policyProgram(t *testing.T, name string) cel.Program {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(admission.CredentialPolicy)))
	doc, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := utilyaml.Unmarshal(doc, policy); err != nil {
		t.Fatal(err)
	}
	expr := ""
	for _, v := range policy.Spec.Variables {
		if v.Name == name {
			expr = v.Expression
		}
	}
	for _, m := range policy.Spec.MatchConditions {
		if m.Name == name {
			expr = m.Expression
		}
	}
	if expr == "" {
		t.Fatalf("%s has no variable or match condition %s", admission.CredentialPolicyName, name)
	}
	env, err := cel.NewEnv(cel.OptionalTypes(), cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	return prg
}

// eval runs prg over the update from old to updated (old nil: a create).
func eval(t *testing.T, prg cel.Program, old, updated *v1alpha1.Tool) bool {
	t.Helper()
	return evalAny(t, prg, old, updated).(bool)
}

func evalAny(t *testing.T, prg cel.Program, old, updated *v1alpha1.Tool) any {
	t.Helper()
	vars := map[string]any{"object": toMap(t, updated), "oldObject": types.NullValue}
	if old != nil {
		vars["oldObject"] = toMap(t, old)
	}
	out, _, err := prg.Eval(vars)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := out.(traits.Lister); ok {
		var names []string
		for it := l.Iterator(); it.HasNext() == types.True; {
			names = append(names, it.Next().Value().(string))
		}
		return names
	}
	return out.Value()
}

// egressCredential adds an egress destination whose requests the proxy injects Secret's
// token into.
func egressCredential(t *v1alpha1.Tool, host, secret string) {
	t.Spec.Sandbox.Network = v1alpha1.NetworkEgress
	if t.Spec.Sandbox.Egress == nil {
		t.Spec.Sandbox.Egress = &v1alpha1.Egress{}
	}
	t.Spec.Sandbox.Egress.Allow = append(t.Spec.Sandbox.Egress.Allow, v1alpha1.EgressRule{Host: host, Port: 443,
		Credential: &v1alpha1.EgressCredential{SecretKeyRef: v1alpha1.CredentialKeySelector{Name: secret, Key: "token"}, Header: "Authorization", Scheme: "Bearer"}})
}

// An egress credential's Secret is a reference like the body's: a Tool with only egress
// credentials is matched, and every Secret it names is checked, the body's first.
func TestCredentialPolicyChecksEgressCredentials(t *testing.T) {
	match, refs := policyProgram(t, "has-credentials"), policyProgram(t, "refs")
	egressOnly := credentialTool()
	egressOnly.Spec.Body.Env = egressOnly.Spec.Body.Env[:1] // the literal only
	egressCredential(egressOnly, "api.github.com", "github-proxy")
	egressOnly.Spec.Sandbox.Egress.Allow = append(egressOnly.Spec.Sandbox.Egress.Allow, v1alpha1.EgressRule{Host: "other.test", Port: 443})
	if !eval(t, match, nil, egressOnly) {
		t.Error("a Tool whose only credential is injected at the proxy is not matched")
	}
	if got := evalAny(t, refs, nil, egressOnly); !slices.Equal(got.([]string), []string{"github-proxy"}) {
		t.Errorf("refs %q, want the egress credential's Secret", got)
	}
	both := credentialTool()
	egressCredential(both, "api.github.com", "github-proxy")
	egressCredential(both, "uploads.github.com", "uploads")
	if got := evalAny(t, refs, nil, both); !slices.Equal(got.([]string), []string{"github", "github-proxy", "uploads"}) {
		t.Errorf("refs %q, want the body's Secret, then each egress credential's", got)
	}
	none := credentialTool()
	none.Spec.Body.Env = none.Spec.Body.Env[:1]
	none.Spec.Sandbox.Network = v1alpha1.NetworkEgress
	none.Spec.Sandbox.Egress = &v1alpha1.Egress{Allow: []v1alpha1.EgressRule{{Host: "other.test", Port: 443}}}
	if eval(t, match, nil, none) {
		t.Error("a Tool without any credential is matched")
	}
}

func toMap(t *testing.T, tool *v1alpha1.Tool) map[string]any {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tool)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCredentialPolicyChecksEveryChangeToWhatRuns(t *testing.T) {
	prg := changesWhatRuns(t)
	old := credentialTool()
	if !eval(t, prg, nil, old) {
		t.Error("a create is not checked")
	}
	if eval(t, prg, old, credentialTool()) {
		t.Error("an update that changes nothing is checked")
	}
	for field, changes := range fieldChanges {
		for _, c := range changes {
			updated := old.DeepCopy()
			c.edit(updated)
			if reflect.DeepEqual(updated, old) {
				t.Fatalf("spec.%s (%s): the edit changes nothing", field, c.what)
			}
			if got := eval(t, prg, old, updated); got != c.checks {
				t.Errorf("spec.%s (%s): checked %v, want %v", field, c.what, got, c.checks)
			}
		}
	}
	for what, edit := range map[string]func(*v1alpha1.Tool){
		"a label":       func(t *v1alpha1.Tool) { t.Labels["team"] = "b" },
		"an annotation": func(t *v1alpha1.Tool) { t.Annotations = map[string]string{"owner": "b"} },
		"a finalizer":   func(t *v1alpha1.Tool) { t.Finalizers = []string{"example.com/keep"} },
		"the status":    func(t *v1alpha1.Tool) { t.Status.ResolvedName = "gh" },
	} {
		updated := old.DeepCopy()
		edit(updated)
		if eval(t, prg, old, updated) {
			t.Errorf("%s: checked, want metadata and status free", what)
		}
	}
}

// TestCredentialPolicyPlacesEveryToolSpecField fails when a Tool's spec gains a field that
// fieldChanges (and so the policy's header) does not place on either side.
func TestCredentialPolicyPlacesEveryToolSpecField(t *testing.T) {
	fields := jsonFields(reflect.TypeFor[v1alpha1.NamespacedToolSpec]())
	for _, field := range fields {
		if len(fieldChanges[field]) == 0 {
			t.Errorf("spec.%s: does a change to it change what runs with a tool's credentials, or who may call it? "+
				"Add it to fieldChanges and to credential-policy.yaml (changesWhatRuns, or the header's list of fields that do not)", field)
		}
	}
	for field := range fieldChanges {
		if !slices.Contains(fields, field) {
			t.Errorf("fieldChanges names spec.%s, which a Tool's spec does not have", field)
		}
	}
}

// jsonFields lists the JSON names of a struct's fields, descending into inlined ones.
func jsonFields(typ reflect.Type) []string {
	var out []string
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		out = append(out, name)
	}
	return out
}
