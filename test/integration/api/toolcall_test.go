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
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("ToolCall spec", Label("toolcall", "spec"), func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("keeps the arguments exactly as written", func(ctx SpecContext) {
		args := map[string]any{"path": "/tmp", "depth": 2, "nested": map[string]any{"x": []any{1, "a", nil}}}
		tc := createCall(ctx, tgt.MakeToolCall("c", ns).Args(args))
		got := &toolgatev1alpha1.ToolCall{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(tc), got)).To(Succeed())
		want, _ := json.Marshal(args)
		Expect(got.Spec.Arguments.Raw).To(MatchJSON(want))
	})

	It("rejects any change to the spec", func(ctx SpecContext) {
		tc := createCall(ctx, tgt.MakeToolCall("c", ns).Args(map[string]any{"n": 1}))
		for name, mutate := range map[string]func(*toolgatev1alpha1.ToolCallSpec){
			"arguments": func(s *toolgatev1alpha1.ToolCallSpec) { s.Arguments = runtime.RawExtension{Raw: []byte(`{"n":2}`)} },
			"tool":      func(s *toolgatev1alpha1.ToolCallSpec) { s.Tool = "other" },
			"scope":     func(s *toolgatev1alpha1.ToolCallSpec) { s.Scope = "elsewhere" },
			"session":   func(s *toolgatev1alpha1.ToolCallSpec) { s.Session = "s2" },
			"ttl added": func(s *toolgatev1alpha1.ToolCallSpec) { ttl := int32(5); s.TTLSecondsAfterFinished = &ttl },
			"arguments with cancel": func(s *toolgatev1alpha1.ToolCallSpec) {
				s.Cancel, s.Arguments = true, runtime.RawExtension{Raw: []byte(`{"n":3}`)}
			},
		} {
			changed := tc.DeepCopy()
			mutate(&changed.Spec)
			Expect(k8sClient.Update(ctx, changed)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec is immutable"), name)
		}
	})

	It("lets spec.cancel be set once and never unset", func(ctx SpecContext) {
		tc := createCall(ctx, tgt.MakeToolCall("c", ns))
		tc.Spec.Cancel = true
		Expect(k8sClient.Update(ctx, tc)).To(Succeed())
		tc.Spec.Cancel = false
		Expect(k8sClient.Update(ctx, tc)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec.cancel cannot be unset"))
	})

	It("allows metadata updates", func(ctx SpecContext) {
		tc := createCall(ctx, tgt.MakeToolCall("c", ns))
		metav1.SetMetaDataLabel(&tc.ObjectMeta, "team", "a")
		Expect(k8sClient.Update(ctx, tc)).To(Succeed())
	})

	DescribeTable("rejects arguments that are not a JSON object",
		func(ctx SpecContext, args string) {
			err := k8sClient.Create(ctx, tgt.MakeToolCall("c", ns).Args(json.RawMessage(args)).Obj())
			Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec.arguments", "must be of type object"))
		},
		Entry("a string", `"rm -rf /"`),
		Entry("an array", `[1,2]`),
		Entry("a number", `42`),
		Entry("a boolean", `true`),
	)

	It("requires tool and arguments; the API server supplies the requester", func(ctx SpecContext) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": toolgatev1alpha1.GroupVersion.String(), "kind": "ToolCall",
			"metadata": map[string]any{"name": "c", "namespace": ns},
			"spec":     map[string]any{},
		}}
		err := k8sClient.Create(ctx, u)
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec.tool: Required value", "spec.arguments: Required value"))
		Expect(err.Error()).NotTo(ContainSubstring("spec.requester"), "the toolgate-requester policy stamped it before validation")
	})

	DescribeTable("rejects malformed names",
		func(ctx SpecContext, w *tgt.ToolCallWrapper, field string) {
			w.Namespace = ns
			Expect(k8sClient.Create(ctx, w.Obj())).To(tgt.BeAPIError(metav1.StatusReasonInvalid, field, "should match"))
		},
		Entry("a tool name with a space", tgt.MakeToolCall("c", "").Tool("rm rf"), "spec.tool"),
		Entry("a scope that is not a DNS label", tgt.MakeToolCall("c", "").Scope("Team_A"), "spec.scope"),
	)

	It("rejects a negative ttlSecondsAfterFinished", func(ctx SpecContext) {
		w := tgt.MakeToolCall("c", ns).TTL(-1)
		Expect(k8sClient.Create(ctx, w.Obj())).To(tgt.BeAPIError(metav1.StatusReasonInvalid,
			"spec.ttlSecondsAfterFinished", "greater than or equal to 0"))
	})

	It("bounds the tool name at 64 characters", func(ctx SpecContext) {
		err := k8sClient.Create(ctx, tgt.MakeToolCall("c", ns).Tool(strings.Repeat("a", 65)).Obj())
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec.tool: Too long"))
	})
})

var _ = Describe("ToolCall status transition rules", Label("toolcall", "status", "cel"), func() {
	var (
		ns     string
		tc     *toolgatev1alpha1.ToolCall
		digest = tgt.Digest([]byte(`{}`))
	)
	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		tc = createCall(ctx, tgt.MakeToolCall("c", ns))
	})

	setResult := func(st *toolgatev1alpha1.ToolCallStatus, r *toolgatev1alpha1.ToolResult) {
		st.Result = r
		st.ResultDigest = tgt.Digest(mustJSON(r))
	}

	It("lets a call walk Pending → Queued → Running → Succeeded", func(ctx SpecContext) {
		for _, p := range []toolgatev1alpha1.ToolCallPhase{toolgatev1alpha1.PhasePending, toolgatev1alpha1.PhaseQueued, toolgatev1alpha1.PhaseRunning} {
			Expect(writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.Phase = p })).To(Succeed())
		}
		Expect(writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) {
			st.Phase = toolgatev1alpha1.PhaseSucceeded
			setResult(st, tgt.OKResult(map[string]any{"lines": []string{"a"}}))
		})).To(Succeed())
		got := &toolgatev1alpha1.ToolCall{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(tc), got)).To(Succeed())
		Expect(got).To(tgt.HavePhase(toolgatev1alpha1.PhaseSucceeded))
	})

	It("keeps a terminal phase: Denied cannot become Succeeded", func(ctx SpecContext) {
		Expect(writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) {
			st.Phase, st.Verdict = toolgatev1alpha1.PhaseDenied, toolgatev1alpha1.VerdictDeny
			setResult(st, tgt.ErrorResult(toolgatev1alpha1.ReasonPolicyDenied, "denied by policy"))
		})).To(Succeed())
		for _, p := range []toolgatev1alpha1.ToolCallPhase{toolgatev1alpha1.PhaseSucceeded, toolgatev1alpha1.PhaseRunning, ""} {
			err := writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.Phase = p })
			Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "phase is terminal and cannot change"), string(p))
		}
		By("other status writes on a terminal call still pass")
		Expect(writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) {
			st.Conditions = append(st.Conditions, metav1.Condition{Type: toolgatev1alpha1.ConditionCompleted,
				Status: metav1.ConditionTrue, Reason: toolgatev1alpha1.ReasonDenied, LastTransitionTime: metav1.Now()})
		})).To(Succeed())
	})

	It("requires a result with a terminal phase", func(ctx SpecContext) {
		err := writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.Phase = toolgatev1alpha1.PhaseFailed })
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "a terminal phase requires a result"))
	})

	It("requires result and resultDigest together", func(ctx SpecContext) {
		err := writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.Result = tgt.OKResult("x") })
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "result and resultDigest are set together"))
		err = writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.ResultDigest = digest })
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "result and resultDigest are set together"))
	})

	It("freezes the result: it can neither change nor disappear", func(ctx SpecContext) {
		Expect(writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) {
			st.Phase = toolgatev1alpha1.PhaseSucceeded
			setResult(st, tgt.OKResult(map[string]any{"answer": 42, "items": []any{"a", map[string]any{"b": true}}}))
		})).To(Succeed())

		By("changing a value deep inside the content")
		err := writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) {
			st.Result.Content.Raw = []byte(`{"answer":42,"items":["a",{"b":false}]}`)
		})
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "result is immutable once set"))

		By("turning it into an error")
		err = writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.Result.IsError = true })
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "result is immutable once set"))

		By("removing it with its digest")
		err = writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.Result, st.ResultDigest = nil, "" })
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "result is immutable once set", "resultDigest is immutable once set"))

		By("changing only the digest")
		err = writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.ResultDigest = digest })
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "resultDigest is immutable once set"))

		By("rewriting the same result")
		Expect(writeStatus(ctx, tc, func(*toolgatev1alpha1.ToolCallStatus) {})).To(Succeed())
	})

	It("forbids removing the whole status", func(ctx SpecContext) {
		Expect(writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) {
			st.Phase = toolgatev1alpha1.PhaseFailed
			setResult(st, tgt.ErrorResult(toolgatev1alpha1.ReasonNonZeroExit, "exit 1"))
		})).To(Succeed())
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(toolgatev1alpha1.GroupVersion.WithKind("ToolCall"))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(tc), u)).To(Succeed())
		unstructured.RemoveNestedField(u.Object, "status")
		Expect(k8sClient.Status().Update(ctx, u)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "status cannot be removed"))
	})

	It("freezes argumentsDigest once set", func(ctx SpecContext) {
		Expect(writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.ArgumentsDigest = digest })).To(Succeed())
		err := writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.ArgumentsDigest = tgt.Digest([]byte(`{"a":1}`)) })
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "argumentsDigest is immutable once set"))
		err = writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.ArgumentsDigest = "" })
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "argumentsDigest is immutable once set"))
	})

	It("rejects a digest that is not sha256:<64 hex>", func(ctx SpecContext) {
		err := writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.ArgumentsDigest = "sha256:XYZ" })
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "status.argumentsDigest", "should match"))
	})

	It("makes a Deny verdict final while Ask may still become Allow", func(ctx SpecContext) {
		Expect(writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) {
			st.Phase, st.Verdict = toolgatev1alpha1.PhaseAwaitingApproval, toolgatev1alpha1.VerdictAsk
		})).To(Succeed())
		Expect(writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.Verdict = toolgatev1alpha1.VerdictAllow })).To(Succeed())
		Expect(writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.Verdict = toolgatev1alpha1.VerdictDeny })).To(Succeed())
		for _, v := range []toolgatev1alpha1.Verdict{toolgatev1alpha1.VerdictAllow, toolgatev1alpha1.VerdictAsk, ""} {
			err := writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.Verdict = v })
			Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "a Deny verdict is final"), string(v))
		}
	})

	DescribeTable("rejects values outside the enums",
		func(ctx SpecContext, mutate func(*toolgatev1alpha1.ToolCallStatus), field string) {
			Expect(writeStatus(ctx, tc, mutate)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, field, "Unsupported value"))
		},
		Entry("phase", func(st *toolgatev1alpha1.ToolCallStatus) { st.Phase = "Exploded" }, "status.phase"),
		Entry("verdict", func(st *toolgatev1alpha1.ToolCallStatus) { st.Verdict = "Maybe" }, "status.verdict"),
		Entry("tool.kind", func(st *toolgatev1alpha1.ToolCallStatus) {
			st.Tool = &toolgatev1alpha1.ToolSnapshot{Kind: "Pod", Name: "echo"}
		}, "status.tool.kind"),
	)

	It("bounds the attempts at 10", func(ctx SpecContext) {
		err := writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) {
			for i := int32(1); i <= 11; i++ {
				st.Attempts = append(st.Attempts, toolgatev1alpha1.Attempt{Attempt: i})
			}
		})
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "status.attempts", "must have at most 10 items"))
	})
})

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return data
}
