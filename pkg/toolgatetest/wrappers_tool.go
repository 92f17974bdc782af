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

package toolgatetest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
)

// DefaultImage is the body image of MakeTool and MakeClusterTool.
const DefaultImage = "toolgate.test/echo:dev"

// ToolSpecSetters are the ToolSpec setters ToolWrapper and ClusterToolWrapper share; each
// returns the wrapper W so that calls chain.
type ToolSpecSetters[W any] struct {
	w    W
	spec *toolgatev1alpha1.ToolSpec
}

// Name sets spec.name (the model-facing name).
func (s ToolSpecSetters[W]) Name(name string) W { s.spec.Name = name; return s.w }

// Description sets spec.description.
func (s ToolSpecSetters[W]) Description(d string) W { s.spec.Description = d; return s.w }

// Parameters sets spec.parameters to a JSON Schema (marshalled unless []byte/json.RawMessage).
func (s ToolSpecSetters[W]) Parameters(schema any) W {
	s.spec.Parameters = &runtime.RawExtension{Raw: mustJSON(schema)}
	return s.w
}

// Output sets spec.output to a JSON Schema (marshalled unless []byte/json.RawMessage).
func (s ToolSpecSetters[W]) Output(schema any) W {
	s.spec.Output = &runtime.RawExtension{Raw: mustJSON(schema)}
	return s.w
}

// ConcurrencySafe sets spec.concurrencySafe.
func (s ToolSpecSetters[W]) ConcurrencySafe(safe bool) W { s.spec.ConcurrencySafe = safe; return s.w }

// ReadOnly sets spec.readOnly.
func (s ToolSpecSetters[W]) ReadOnly(ro bool) W { s.spec.ReadOnly = ro; return s.w }

// Timeout sets spec.timeout.
func (s ToolSpecSetters[W]) Timeout(d time.Duration) W {
	s.spec.Timeout = &metav1.Duration{Duration: d}
	return s.w
}

// CallTTL sets spec.callTTLSecondsAfterFinished: how long the tool's calls are kept after
// they finished.
func (s ToolSpecSetters[W]) CallTTL(seconds int32) W {
	s.spec.CallTTLSecondsAfterFinished = &seconds
	return s.w
}

// ApprovalWindow sets spec.approvalWindow.
func (s ToolSpecSetters[W]) ApprovalWindow(d time.Duration) W {
	s.spec.ApprovalWindow = &metav1.Duration{Duration: d}
	return s.w
}

// Retry sets spec.retry.
func (s ToolSpecSetters[W]) Retry(maxAttempts int32, onReasons ...string) W {
	s.spec.Retry = toolgatev1alpha1.RetryPolicy{MaxAttempts: maxAttempts, OnReasons: onReasons}
	return s.w
}

// Image sets spec.body.image.
func (s ToolSpecSetters[W]) Image(image string) W { s.spec.Body.Image = image; return s.w }

// Command sets spec.body.command.
func (s ToolSpecSetters[W]) Command(cmd ...string) W { s.spec.Body.Command = cmd; return s.w }

// BodyArgs sets spec.body.args.
func (s ToolSpecSetters[W]) BodyArgs(args ...string) W { s.spec.Body.Args = args; return s.w }

// Env appends a variable to spec.body.env.
func (s ToolSpecSetters[W]) Env(name, value string) W {
	s.spec.Body.Env = append(s.spec.Body.Env, toolgatev1alpha1.EnvVar{Name: name, Value: value})
	return s.w
}

// SecretEnv appends a credential to spec.body.env: variable name from key of the Secret
// secret in the call's namespace.
func (s ToolSpecSetters[W]) SecretEnv(name, secret, key string) W {
	s.spec.Body.Env = append(s.spec.Body.Env, toolgatev1alpha1.EnvVar{Name: name, ValueFrom: &toolgatev1alpha1.EnvVarSource{
		SecretKeyRef: toolgatev1alpha1.CredentialKeySelector{Name: secret, Key: key}}})
	return s.w
}

// SecretFile appends a credential to spec.body.secretFiles: file name (under
// /run/secrets/toolgate) from key of the Secret secret in the call's namespace.
func (s ToolSpecSetters[W]) SecretFile(name, secret, key string) W {
	s.spec.Body.SecretFiles = append(s.spec.Body.SecretFiles, toolgatev1alpha1.SecretFile{Name: name,
		SecretKeyRef: toolgatev1alpha1.CredentialKeySelector{Name: secret, Key: key}})
	return s.w
}

// Resources sets spec.body.resources.
func (s ToolSpecSetters[W]) Resources(r corev1.ResourceRequirements) W {
	s.spec.Body.Resources = r
	return s.w
}

// RunnerInImage sets spec.body.runnerInImage and, if not empty, spec.body.runnerPath.
func (s ToolSpecSetters[W]) RunnerInImage(path string) W {
	s.spec.Body.RunnerInImage, s.spec.Body.RunnerPath = true, path
	return s.w
}

// RunnerPath sets spec.body.runnerPath alone.
func (s ToolSpecSetters[W]) RunnerPath(path string) W { s.spec.Body.RunnerPath = path; return s.w }

// Network sets spec.sandbox.network.
// Scratch sets sandbox.scratch (None: no writable volume; needs RunnerInImage).
func (s ToolSpecSetters[W]) Scratch(m toolgatev1alpha1.ScratchMode) W {
	s.spec.Sandbox.Scratch = m
	return s.w
}

func (s ToolSpecSetters[W]) Network(n toolgatev1alpha1.NetworkMode) W {
	s.spec.Sandbox.Network = n
	return s.w
}

// RuntimeClass sets spec.sandbox.runtimeClassName.
func (s ToolSpecSetters[W]) RuntimeClass(name string) W {
	s.spec.Sandbox.RuntimeClassName = &name
	return s.w
}

// MaxOutputBytes sets spec.sandbox.maxOutputBytes.
func (s ToolSpecSetters[W]) MaxOutputBytes(n int64) W { s.spec.Sandbox.MaxOutputBytes = n; return s.w }

// Presentation sets spec.presentation.
func (s ToolSpecSetters[W]) Presentation(call, result string) W {
	s.spec.Presentation = &toolgatev1alpha1.Presentation{Call: call, Result: result}
	return s.w
}

// WarmPool sets spec.warmPool: size idle Pods, replaced after maxIdle (0: the default).
func (s ToolSpecSetters[W]) WarmPool(size int32, maxIdle time.Duration) W {
	s.spec.WarmPool = &toolgatev1alpha1.WarmPool{Size: size}
	if maxIdle > 0 {
		s.spec.WarmPool.MaxIdle = &metav1.Duration{Duration: maxIdle}
	}
	return s.w
}

// WarmPoolNamespaces sets spec.warmPool.namespaces, where a ClusterTool's pool is kept
// (size Pods in each); call it after WarmPool.
func (s ToolSpecSetters[W]) WarmPoolNamespaces(namespaces ...string) W {
	if s.spec.WarmPool == nil {
		s.spec.WarmPool = &toolgatev1alpha1.WarmPool{}
	}
	s.spec.WarmPool.Namespaces = namespaces
	return s.w
}

// ToolWrapper builds a Tool.
type ToolWrapper struct {
	tool toolgatev1alpha1.Tool
	ToolSpecSetters[*ToolWrapper]
}

// MakeTool returns a Tool in the namespace layer running DefaultImage.
func MakeTool(name, ns string) *ToolWrapper {
	w := &ToolWrapper{tool: toolgatev1alpha1.Tool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: toolgatev1alpha1.NamespacedToolSpec{
			ToolSpec: toolgatev1alpha1.ToolSpec{Body: toolgatev1alpha1.ToolBody{Image: DefaultImage}},
		},
	}}
	w.ToolSpecSetters = ToolSpecSetters[*ToolWrapper]{w: w, spec: &w.tool.Spec.ToolSpec}
	return w
}

// Obj returns a deep copy of the Tool.
func (w *ToolWrapper) Obj() *toolgatev1alpha1.Tool { return w.tool.DeepCopy() }

// Scope sets spec.scope.
func (w *ToolWrapper) Scope(scope string) *ToolWrapper { w.tool.Spec.Scope = scope; return w }

// Annotation sets one metadata annotation (policies see them as tool.annotations).
func (w *ToolWrapper) Annotation(key, value string) *ToolWrapper {
	metav1.SetMetaDataAnnotation(&w.tool.ObjectMeta, key, value)
	return w
}

// ClusterToolWrapper builds a ClusterTool.
type ClusterToolWrapper struct {
	tool toolgatev1alpha1.ClusterTool
	ToolSpecSetters[*ClusterToolWrapper]
}

// MakeClusterTool returns a ClusterTool running DefaultImage.
func MakeClusterTool(name string) *ClusterToolWrapper {
	w := &ClusterToolWrapper{tool: toolgatev1alpha1.ClusterTool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       toolgatev1alpha1.ToolSpec{Body: toolgatev1alpha1.ToolBody{Image: DefaultImage}},
	}}
	w.ToolSpecSetters = ToolSpecSetters[*ClusterToolWrapper]{w: w, spec: &w.tool.Spec}
	return w
}

// Obj returns a deep copy of the ClusterTool.
func (w *ClusterToolWrapper) Obj() *toolgatev1alpha1.ClusterTool { return w.tool.DeepCopy() }

// ToolScopeWrapper builds a ToolScope.
type ToolScopeWrapper struct{ toolgatev1alpha1.ToolScope }

// MakeToolScope returns a ToolScope with no parent and no restrictions.
func MakeToolScope(name, ns string) *ToolScopeWrapper {
	return &ToolScopeWrapper{toolgatev1alpha1.ToolScope{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
	}}
}

// Obj returns a deep copy of the ToolScope.
func (w *ToolScopeWrapper) Obj() *toolgatev1alpha1.ToolScope { return w.DeepCopy() }

// Parent sets spec.parent.
func (w *ToolScopeWrapper) Parent(p string) *ToolScopeWrapper { w.Spec.Parent = p; return w }

// Admission puts the scope's calls' Jobs behind Kueue LocalQueue queue (empty: the
// operator's --admission-queue), waiting at most maxWait (0: the operator's).
func (w *ToolScopeWrapper) Admission(queue string, maxWait time.Duration) *ToolScopeWrapper {
	w.Spec.Admission = &toolgatev1alpha1.Admission{QueueName: queue}
	if maxWait > 0 {
		w.Spec.Admission.MaxWait = &metav1.Duration{Duration: maxWait}
	}
	return w
}

// Allow sets spec.allow.
func (w *ToolScopeWrapper) Allow(tools ...string) *ToolScopeWrapper { w.Spec.Allow = tools; return w }

// Deny sets spec.deny.
func (w *ToolScopeWrapper) Deny(tools ...string) *ToolScopeWrapper { w.Spec.Deny = tools; return w }

// Subjects sets spec.subjects.
func (w *ToolScopeWrapper) Subjects(users ...string) *ToolScopeWrapper {
	w.Spec.Subjects = users
	return w
}

// RuntimeClass sets spec.runtimeClassName: the RuntimeClass every call in the scope must run under.
func (w *ToolScopeWrapper) RuntimeClass(name string) *ToolScopeWrapper {
	w.Spec.RuntimeClassName = &name
	return w
}

// ApprovalSink adds an entry to spec.approvalSinks: events to url, signed with the key
// "hmac-key" of the Secret secretName in the scope's namespace; events empty means all.
func (w *ToolScopeWrapper) ApprovalSink(name, url, secretName string, events ...toolgatev1alpha1.ApprovalEvent) *ToolScopeWrapper {
	w.Spec.ApprovalSinks = append(w.Spec.ApprovalSinks, toolgatev1alpha1.ApprovalSink{Name: name, URL: url,
		SecretRef: toolgatev1alpha1.SecretKeySelector{Name: secretName, Key: toolgatev1alpha1.DefaultSecretKey}, Events: events})
	return w
}

// ToolPolicyWrapper builds a ToolPolicy.
type ToolPolicyWrapper struct{ toolgatev1alpha1.ToolPolicy }

// MakeToolPolicy returns a PreExecute policy without rules: add at least one (Rule,
// VerdictRule, ActionRule) before creating it.
func MakeToolPolicy(name, ns string) *ToolPolicyWrapper {
	return &ToolPolicyWrapper{toolgatev1alpha1.ToolPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       toolgatev1alpha1.ToolPolicySpec{Stage: toolgatev1alpha1.StagePreExecute},
	}}
}

// Obj returns a deep copy of the ToolPolicy.
func (w *ToolPolicyWrapper) Obj() *toolgatev1alpha1.ToolPolicy { return w.DeepCopy() }

// Stage sets spec.stage.
func (w *ToolPolicyWrapper) Stage(s toolgatev1alpha1.PolicyStage) *ToolPolicyWrapper {
	w.Spec.Stage = s
	return w
}

// Order sets spec.order.
func (w *ToolPolicyWrapper) Order(o int32) *ToolPolicyWrapper { w.Spec.Order = o; return w }

// Tools sets spec.tools.
func (w *ToolPolicyWrapper) Tools(names ...string) *ToolPolicyWrapper { w.Spec.Tools = names; return w }

// ApprovalWindow sets spec.approvalWindow.
func (w *ToolPolicyWrapper) ApprovalWindow(d time.Duration) *ToolPolicyWrapper {
	w.Spec.ApprovalWindow = &metav1.Duration{Duration: d}
	return w
}

// Rule appends a rule as given.
func (w *ToolPolicyWrapper) Rule(r toolgatev1alpha1.PolicyRule) *ToolPolicyWrapper {
	w.Spec.Rules = append(w.Spec.Rules, r)
	return w
}

// VerdictRule appends a PreExecute/Guard rule: when expression is true, verdict applies.
func (w *ToolPolicyWrapper) VerdictRule(name, expression string, v toolgatev1alpha1.Verdict) *ToolPolicyWrapper {
	return w.Rule(toolgatev1alpha1.PolicyRule{Name: name, Expression: expression, Verdict: v})
}

// ActionRule appends a PostExecute rule; replace is only for ActionRedact.
func (w *ToolPolicyWrapper) ActionRule(name, expression string, a toolgatev1alpha1.PolicyAction, replace string) *ToolPolicyWrapper {
	return w.Rule(toolgatev1alpha1.PolicyRule{Name: name, Expression: expression, Action: a, Replace: replace})
}
