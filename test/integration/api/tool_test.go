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
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// minimalTool is a Tool (or ClusterTool, with ns "") with nothing but its image, as a user
// would write it in YAML: absent fields, not Go zero values.
func minimalTool(kind, name, ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": toolgatev1alpha1.GroupVersion.String(), "kind": kind,
		"spec": map[string]any{"body": map[string]any{"image": tgt.DefaultImage}},
	}}
	u.SetName(name)
	u.SetNamespace(ns)
	return u
}

var _ = Describe("Tool and ClusterTool defaults", Label("tool", "defaults"), func() {
	DescribeTable("fill every optional setting",
		func(ctx SpecContext, kind string, namespaced bool) {
			ns := ""
			if namespaced {
				ns = newNamespace(ctx)
			}
			u := minimalTool(kind, "echo", ns)
			Expect(k8sClient.Create(ctx, u)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, u))).To(Succeed()) })

			spec := u.Object["spec"].(map[string]any)
			Expect(spec).To(HaveKeyWithValue("timeout", "60s"))
			Expect(spec).To(HaveKeyWithValue("approvalWindow", "15m"))
			Expect(spec).To(HaveKeyWithValue("concurrencySafe", false))
			Expect(spec).To(HaveKeyWithValue("readOnly", false))
			Expect(spec).To(HaveKeyWithValue("retry", map[string]any{"maxAttempts": int64(1)}))
			Expect(spec).To(HaveKeyWithValue("sandbox", map[string]any{"network": "None", "maxOutputBytes": int64(1048576), "scratch": "EmptyDir"}))
			Expect(spec["body"]).To(HaveKeyWithValue("runnerInImage", false))
		},
		Entry("Tool", "Tool", true),
		Entry("ClusterTool", "ClusterTool", false),
	)

	It("reads back into the Go types with the defaults", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		Expect(k8sClient.Create(ctx, minimalTool("Tool", "echo", ns))).To(Succeed())
		tool := &toolgatev1alpha1.Tool{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "echo"}, tool)).To(Succeed())
		Expect(tool.Spec.Timeout.Duration).To(Equal(60 * time.Second))
		Expect(tool.Spec.ApprovalWindow.Duration).To(Equal(15 * time.Minute))
		Expect(tool.Spec.Retry.MaxAttempts).To(Equal(int32(1)))
		Expect(tool.Spec.Sandbox.Network).To(Equal(toolgatev1alpha1.NetworkNone))
		Expect(tool.Spec.Sandbox.MaxOutputBytes).To(Equal(int64(1 << 20)))
	})

	It("defaults a ToolPolicy's order to 0", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": toolgatev1alpha1.GroupVersion.String(), "kind": "ToolPolicy",
			"metadata": map[string]any{"name": "p", "namespace": ns},
			"spec": map[string]any{"stage": "PreExecute",
				"rules": []any{map[string]any{"name": "r", "expression": "true", "verdict": "Allow"}}},
		}}
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
		Expect(u.Object["spec"]).To(HaveKeyWithValue("order", int64(0)))
	})
})

var _ = Describe("Tool validation", Label("tool", "validation"), func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	DescribeTable("accepts settings at their bounds",
		func(ctx SpecContext, w *tgt.ToolWrapper) {
			tool := w.Obj()
			tool.Namespace = ns
			Expect(k8sClient.Create(ctx, tool)).To(Succeed())
		},
		Entry("timeout 1s", tgt.MakeTool("t", "").Timeout(time.Second)),
		Entry("timeout 24h", tgt.MakeTool("t", "").Timeout(24*time.Hour)),
		Entry("approvalWindow 168h", tgt.MakeTool("t", "").ApprovalWindow(168*time.Hour)),
		Entry("maxAttempts 10 with every retryable reason", tgt.MakeTool("t", "").Retry(10, toolgatev1alpha1.RetryableReasons()...)),
		Entry("maxOutputBytes 1 MiB", tgt.MakeTool("t", "").MaxOutputBytes(1<<20)),
		Entry("network Egress", tgt.MakeTool("t", "").Network(toolgatev1alpha1.NetworkEgress)),
		Entry("runnerPath with runnerInImage", tgt.MakeTool("t", "").RunnerInImage("/bin/runner")),
		Entry("scratch None with runnerInImage", tgt.MakeTool("t", "").RunnerInImage("").Scratch(toolgatev1alpha1.ScratchNone)),
		Entry("a warm pool of 50, maxIdle 30s", tgt.MakeTool("t", "").WarmPool(50, 30*time.Second)),
		Entry("a metadata.name with a dot and a valid spec.name", tgt.MakeTool("grep.v2", "").Name("grep_v2")),
	)

	DescribeTable("rejects settings out of bounds",
		func(ctx SpecContext, w *tgt.ToolWrapper, substrings ...string) {
			tool := w.Obj()
			tool.Namespace = ns
			Expect(k8sClient.Create(ctx, tool)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, substrings...))
		},
		Entry("warmPool size 51", tgt.MakeTool("t", "").WarmPool(51, 0), "spec.warmPool.size"),
		Entry("warmPool size -1", tgt.MakeTool("t", "").WarmPool(-1, 0), "spec.warmPool.size"),
		Entry("warmPool maxIdle 10s", tgt.MakeTool("t", "").WarmPool(2, 10*time.Second), "spec.warmPool.maxIdle", "maxIdle must be between 30s and 24h"),
		Entry("warmPool maxIdle 25h", tgt.MakeTool("t", "").WarmPool(2, 25*time.Hour), "spec.warmPool.maxIdle", "maxIdle must be between 30s and 24h"),
		Entry("warmPool namespaces on a Tool", tgt.MakeTool("t", "").WarmPool(2, 0).WarmPoolNamespaces("team-a"),
			"warmPool.namespaces is for ClusterTools: a Tool's pool is kept in the Tool's own namespace"),
		Entry("timeout 500ms", tgt.MakeTool("t", "").Timeout(500*time.Millisecond), "spec.timeout", "timeout must be between 1s and 24h"),
		Entry("timeout 25h", tgt.MakeTool("t", "").Timeout(25*time.Hour), "spec.timeout", "timeout must be between 1s and 24h"),
		Entry("approvalWindow 0s", tgt.MakeTool("t", "").ApprovalWindow(0), "approvalWindow must be between 1s and 168h"),
		Entry("approvalWindow 8 days", tgt.MakeTool("t", "").ApprovalWindow(192*time.Hour), "approvalWindow must be between 1s and 168h"),
		Entry("maxAttempts 11", tgt.MakeTool("t", "").Retry(11), "spec.retry.maxAttempts", "less than or equal to 10"),
		Entry("maxAttempts -1", tgt.MakeTool("t", "").Retry(-1), "spec.retry.maxAttempts", "greater than or equal to 1"),
		Entry("a reason that does not retry", tgt.MakeTool("t", "").Retry(2, "PolicyDenied"), "spec.retry.onReasons[0]", "Unsupported value"),
		Entry("maxOutputBytes over 1 MiB", tgt.MakeTool("t", "").MaxOutputBytes(1<<20+1), "spec.sandbox.maxOutputBytes", "less than or equal to 1048576"),
		Entry("network Open", tgt.MakeTool("t", "").Network("Open"), "spec.sandbox.network", "Unsupported value"),
		Entry("an empty image", tgt.MakeTool("t", "").Image(""), "spec.body.image"),
		Entry("a description of 4097 characters", tgt.MakeTool("t", "").Description(strings.Repeat("x", 4097)), "spec.description: Too long"),
		Entry("a model-facing name with a dot", tgt.MakeTool("t", "").Name("grep.v2"), "spec.name", "should match"),
		Entry("a scope that is not a DNS label", tgt.MakeTool("t", "").Scope("Team_A"), "spec.scope", "should match"),
		Entry("runnerPath without runnerInImage", tgt.MakeTool("t", "").RunnerPath("/bin/runner"), "runnerPath requires runnerInImage"),
		Entry("scratch None without runnerInImage", tgt.MakeTool("t", "").Scratch(toolgatev1alpha1.ScratchNone), "sandbox.scratch None requires body.runnerInImage"),
		Entry("scratch of an unknown kind", tgt.MakeTool("t", "").Scratch("HostPath"), "spec.sandbox.scratch", "Unsupported value"),
		Entry("a metadata.name with a dot and no spec.name", tgt.MakeTool("grep.v2", ""), "spec.name is required when metadata.name is not a valid tool name"),
		Entry("65 environment variables", manyEnv(65), "spec.body.env", "must have at most 64 items"),
		Entry("a negative call TTL", tgt.MakeTool("t", "").CallTTL(-1), "spec.callTTLSecondsAfterFinished", "greater than or equal to 0"),
	)

	It("rejects a timeout that is not a duration", func(ctx SpecContext) {
		u := minimalTool("Tool", "t", ns)
		Expect(unstructured.SetNestedField(u.Object, "1d", "spec", "timeout")).To(Succeed())
		Expect(k8sClient.Create(ctx, u)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec.timeout"))
	})

	It("rejects duplicate environment variable names", func(ctx SpecContext) {
		err := k8sClient.Create(ctx, tgt.MakeTool("t", ns).Env("A", "1").Env("A", "2").Obj())
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec.body.env[1]", "Duplicate value"))
	})
})

func manyEnv(n int) *tgt.ToolWrapper {
	w := tgt.MakeTool("t", "")
	for i := range n {
		w.Env("V"+strings.Repeat("X", i), "v")
	}
	return w
}

var _ = Describe("ClusterTool warm pool validation", Label("tool", "validation", "warm"), func() {
	DescribeTable("accepts",
		func(ctx SpecContext, w *tgt.ClusterToolWrapper) {
			ct := w.Obj()
			Expect(k8sClient.Create(ctx, ct)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ct))).To(Succeed()) })
		},
		Entry("a pool in one namespace", tgt.MakeClusterTool("ct-wp-one").WarmPool(2, 0).WarmPoolNamespaces("team-a")),
		Entry("a pool in 32 namespaces", tgt.MakeClusterTool("ct-wp-32").WarmPool(1, 0).WarmPoolNamespaces(manyNamespaces(32)...)),
		Entry("size 0 without namespaces", tgt.MakeClusterTool("ct-wp-zero").WarmPool(0, 0)),
	)

	DescribeTable("rejects",
		func(ctx SpecContext, w *tgt.ClusterToolWrapper, substrings ...string) {
			Expect(k8sClient.Create(ctx, w.Obj())).To(tgt.BeAPIError(metav1.StatusReasonInvalid, substrings...))
		},
		Entry("a pool without namespaces", tgt.MakeClusterTool("ct-wp-none").WarmPool(2, 0),
			"warmPool.namespaces is required for a ClusterTool with a warm pool"),
		Entry("a pool with an empty namespace list", tgt.MakeClusterTool("ct-wp-empty").WarmPool(2, 0).WarmPoolNamespaces(),
			"warmPool.namespaces is required for a ClusterTool with a warm pool"),
		Entry("33 namespaces", tgt.MakeClusterTool("ct-wp-33").WarmPool(1, 0).WarmPoolNamespaces(manyNamespaces(33)...),
			"spec.warmPool.namespaces", "must have at most 32 items"),
		Entry("a namespace that is not a DNS label", tgt.MakeClusterTool("ct-wp-bad").WarmPool(1, 0).WarmPoolNamespaces("Team_A"),
			"spec.warmPool.namespaces[0]", "should match"),
		Entry("a namespace listed twice", tgt.MakeClusterTool("ct-wp-dup").WarmPool(1, 0).WarmPoolNamespaces("a", "a"),
			"spec.warmPool.namespaces[1]", "Duplicate value"),
	)
})

func manyNamespaces(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("team-%d", i)
	}
	return out
}
