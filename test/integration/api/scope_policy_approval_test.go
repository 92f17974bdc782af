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

package api_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("ToolScope validation", Label("toolscope", "validation"), func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("accepts a scope with a parent and restrictions", func(ctx SpecContext) {
		s := tgt.MakeToolScope("child", ns).Parent("team").Allow("grep", "read_file").Deny("shell").
			Subjects("system:serviceaccount:agents:coder").Obj()
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
	})

	DescribeTable("rejects",
		func(ctx SpecContext, w *tgt.ToolScopeWrapper, substrings ...string) {
			s := w.Obj()
			s.Namespace = ns
			Expect(k8sClient.Create(ctx, s)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, substrings...))
		},
		Entry("a scope that is its own parent", tgt.MakeToolScope("loop", "").Parent("loop"), "spec.parent must not name the scope itself"),
		Entry("a parent that is not a DNS label", tgt.MakeToolScope("s", "").Parent("Team_A"), "spec.parent", "should match"),
		Entry("a name that is not a DNS label", tgt.MakeToolScope("team.a", ""), "a ToolScope's name must be a DNS label"),
		Entry("a tool name that is not one", tgt.MakeToolScope("s", "").Deny("rm -rf"), "spec.deny[0]", "should match"),
		Entry("1025 denied tools", tgt.MakeToolScope("s", "").Deny(names(1025)...), "spec.deny", "must have at most 1024 items"),
		Entry("257 subjects", tgt.MakeToolScope("s", "").Subjects(names(257)...), "spec.subjects", "must have at most 256 items"),
		Entry("a duplicate allowed tool", tgt.MakeToolScope("s", "").Allow("grep", "grep"), "spec.allow[1]", "Duplicate value"),
	)
})

var _ = Describe("ToolPolicy validation", Label("toolpolicy", "validation"), func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	DescribeTable("accepts",
		func(ctx SpecContext, w *tgt.ToolPolicyWrapper) {
			p := w.Obj()
			p.Namespace = ns
			Expect(k8sClient.Create(ctx, p)).To(Succeed())
		},
		Entry("a PreExecute policy with verdicts", tgt.MakeToolPolicy("p", "").Order(-1000).Tools("shell").ApprovalWindow(time.Hour).
			VerdictRule("ask-writes", "!tool.readOnly", toolgatev1alpha1.VerdictAsk).
			VerdictRule("deny-root", "arguments.path == '/'", toolgatev1alpha1.VerdictDeny)),
		Entry("a Guard policy", tgt.MakeToolPolicy("p", "").Stage(toolgatev1alpha1.StageGuard).Order(1000).
			VerdictRule("night", "true", toolgatev1alpha1.VerdictAsk)),
		Entry("a PostExecute policy with actions", tgt.MakeToolPolicy("p", "").Stage(toolgatev1alpha1.StagePostExecute).
			ActionRule("redact", "result.content.contains('secret')", toolgatev1alpha1.ActionRedact, "'[redacted]'").
			ActionRule("block", "size(result.content) > 100", toolgatev1alpha1.ActionBlock, "").
			ActionRule("accept", "true", toolgatev1alpha1.ActionAccept, "")),
	)

	DescribeTable("rejects",
		func(ctx SpecContext, w *tgt.ToolPolicyWrapper, substrings ...string) {
			p := w.Obj()
			p.Namespace = ns
			Expect(k8sClient.Create(ctx, p)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, substrings...))
		},
		Entry("an unknown stage", tgt.MakeToolPolicy("p", "").Stage("Sometime").VerdictRule("r", "true", toolgatev1alpha1.VerdictAllow),
			"spec.stage", "Unsupported value"),
		Entry("no rules", tgt.MakeToolPolicy("p", ""), "spec.rules"),
		Entry("65 rules", manyRules(65), "spec.rules", "must have at most 64 items"),
		Entry("order 1001", tgt.MakeToolPolicy("p", "").Order(1001).VerdictRule("r", "true", toolgatev1alpha1.VerdictAllow),
			"spec.order", "less than or equal to 1000"),
		Entry("order -1001", tgt.MakeToolPolicy("p", "").Order(-1001).VerdictRule("r", "true", toolgatev1alpha1.VerdictAllow),
			"spec.order", "greater than or equal to -1000"),
		Entry("a rule name that is not a DNS label", tgt.MakeToolPolicy("p", "").VerdictRule("Deny Root", "true", toolgatev1alpha1.VerdictDeny),
			"spec.rules[0].name", "should match"),
		Entry("two rules of one name", tgt.MakeToolPolicy("p", "").VerdictRule("r", "true", toolgatev1alpha1.VerdictAllow).
			VerdictRule("r", "false", toolgatev1alpha1.VerdictDeny), "spec.rules[1]", "Duplicate value"),
		Entry("an unknown verdict", tgt.MakeToolPolicy("p", "").VerdictRule("r", "true", "Perhaps"), "spec.rules[0].verdict", "Unsupported value"),
		Entry("an unknown action", tgt.MakeToolPolicy("p", "").Stage(toolgatev1alpha1.StagePostExecute).ActionRule("r", "true", "Shred", ""),
			"spec.rules[0].action", "Unsupported value"),
		Entry("a PreExecute rule with an action", tgt.MakeToolPolicy("p", "").ActionRule("r", "true", toolgatev1alpha1.ActionBlock, ""),
			"rules of a PreExecute or Guard policy set verdict, not action"),
		Entry("a Guard rule without a verdict", tgt.MakeToolPolicy("p", "").Stage(toolgatev1alpha1.StageGuard).
			Rule(toolgatev1alpha1.PolicyRule{Name: "r", Expression: "true"}), "rules of a PreExecute or Guard policy set verdict, not action"),
		Entry("a PostExecute rule with a verdict", tgt.MakeToolPolicy("p", "").Stage(toolgatev1alpha1.StagePostExecute).
			VerdictRule("r", "true", toolgatev1alpha1.VerdictDeny), "rules of a PostExecute policy set action, not verdict"),
		Entry("Redact without replace", tgt.MakeToolPolicy("p", "").Stage(toolgatev1alpha1.StagePostExecute).
			ActionRule("r", "true", toolgatev1alpha1.ActionRedact, ""), "replace is required for action Redact and allowed only there"),
		Entry("replace with Block", tgt.MakeToolPolicy("p", "").Stage(toolgatev1alpha1.StagePostExecute).
			ActionRule("r", "true", toolgatev1alpha1.ActionBlock, "'x'"), "replace is required for action Redact and allowed only there"),
		Entry("an approvalWindow of 0s", tgt.MakeToolPolicy("p", "").ApprovalWindow(0).VerdictRule("r", "true", toolgatev1alpha1.VerdictAsk),
			"approvalWindow must be between 1s and 168h"),
	)
})

var _ = Describe("ToolCallApproval", Label("approval"), func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("rejects any change to the spec", func(ctx SpecContext) {
		a := tgt.MakeToolCallApproval("c", ns).CallUID(someCallUID).Reason("looks fine").Obj()
		Expect(k8sClient.Create(ctx, a)).To(Succeed())
		for name, mutate := range map[string]func(*toolgatev1alpha1.ToolCallApprovalSpec){
			"callUID":         func(s *toolgatev1alpha1.ToolCallApprovalSpec) { s.CallUID = "0b9e0f6a-0000-4000-8000-000000000002" },
			"decision":        func(s *toolgatev1alpha1.ToolCallApprovalSpec) { s.Decision = toolgatev1alpha1.DecisionDeny },
			"argumentsDigest": func(s *toolgatev1alpha1.ToolCallApprovalSpec) { s.ArgumentsDigest = tgt.Digest([]byte(`{"x":1}`)) },
			"reason":          func(s *toolgatev1alpha1.ToolCallApprovalSpec) { s.Reason = "changed my mind" },
		} {
			changed := a.DeepCopy()
			mutate(&changed.Spec)
			Expect(k8sClient.Update(ctx, changed)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec is immutable"), name)
		}
	})

	It("requires spec.callUID", func(ctx SpecContext) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": toolgatev1alpha1.GroupVersion.String(), "kind": "ToolCallApproval",
			"metadata": map[string]any{"name": "c", "namespace": ns},
			"spec":     map[string]any{"decision": "Approve", "argumentsDigest": tgt.Digest([]byte(tgt.EmptyArguments)), "approver": tgt.AdminUser},
		}}
		Expect(k8sClient.Create(ctx, u)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec.callUID", "Required value"))
	})

	DescribeTable("rejects",
		func(ctx SpecContext, w *tgt.ToolCallApprovalWrapper, substrings ...string) {
			a := w.Obj()
			a.Namespace = ns
			Expect(k8sClient.Create(ctx, a)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, substrings...))
		},
		Entry("an unknown decision", tgt.MakeToolCallApproval("c", "").CallUID(someCallUID).Decision("Maybe"), "spec.decision", "Unsupported value"),
		Entry("a digest that is not sha256", tgt.MakeToolCallApproval("c", "").CallUID(someCallUID).ArgumentsDigest("md5:abc"), "spec.argumentsDigest", "should match"),
		Entry("an upper-case digest", tgt.MakeToolCallApproval("c", "").CallUID(someCallUID).ArgumentsDigest("sha256:"+strings.Repeat("A", 64)),
			"spec.argumentsDigest", "should match"),
		Entry("an empty callUID: an approval answers one call", tgt.MakeToolCallApproval("c", ""), "spec.callUID", "at least 1 chars long"),
		Entry("a callUID over 128 characters", tgt.MakeToolCallApproval("c", "").CallUID(types.UID(strings.Repeat("u", 129))),
			"spec.callUID", "Too long"),
	)
})

// names returns n distinct valid tool names.
func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("tool-%d", i)
	}
	return out
}

func manyRules(n int) *tgt.ToolPolicyWrapper {
	w := tgt.MakeToolPolicy("p", "")
	for i := range n {
		w.VerdictRule(fmt.Sprintf("r%d", i), "true", toolgatev1alpha1.VerdictAllow)
	}
	return w
}
