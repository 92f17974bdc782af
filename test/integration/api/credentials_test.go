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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// body.env[].valueFrom.secretKeyRef and body.secretFiles: a literal or a credential, at
// most 8 credentials, file names that stay under /run/secrets/toolgate, no warm pool. (Who
// may reference a Secret is the toolgate-credentials admission policy's, tested apart; the
// suite's admin may read every Secret.)
var _ = Describe("Tool credentials validation", Label("tool", "validation", "credentials"), func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	tool := func() *tgt.ToolWrapper { return tgt.MakeTool("t", "") }
	envs := func(w *tgt.ToolWrapper, n int) *tgt.ToolWrapper {
		for i := range n {
			w = w.SecretEnv(fmt.Sprintf("TOKEN_%d", i), "s", "k")
		}
		return w
	}
	files := func(w *tgt.ToolWrapper, n int) *tgt.ToolWrapper {
		for i := range n {
			w = w.SecretFile(fmt.Sprintf("f%d", i), "s", "k")
		}
		return w
	}

	DescribeTable("accepts",
		func(ctx SpecContext, w *tgt.ToolWrapper) {
			t := w.Obj()
			t.Namespace = ns
			Expect(k8sClient.Create(ctx, t)).To(Succeed())
		},
		Entry("an env credential beside a literal", tool().Env("MODE", "fast").SecretEnv("GITHUB_TOKEN", "github", "token")),
		Entry("a secret file", tool().SecretFile("kubeconfig", "deploy", "config")),
		Entry("file names with dots, dashes and underscores", tool().SecretFile("ca.pem", "s", "ca.crt").SecretFile("a_b-c", "s", "k")),
		Entry("8 credentials: 5 variables and 3 files", files(envs(tool(), 5), 3)),
		Entry("8 secret files", files(tool(), 8)),
		Entry("a variable with neither value nor valueFrom (empty, as before)", tool().Env("EMPTY", "")),
		Entry("a warm pool without credentials", tool().Env("MODE", "fast").WarmPool(1, 0)),
	)

	DescribeTable("rejects",
		func(ctx SpecContext, w *tgt.ToolWrapper, substrings ...string) {
			t := w.Obj()
			t.Namespace = ns
			Expect(k8sClient.Create(ctx, t)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, substrings...))
		},
		Entry("9 credentials", files(envs(tool(), 6), 3), "a tool body holds at most 8 credentials"),
		Entry("9 secret files", files(tool(), 9), "spec.body.secretFiles", "must have at most 8 items"),
		Entry("a file name starting with a dot", tool().SecretFile(".hidden", "s", "k"), "spec.body.secretFiles[0].name", "should match"),
		Entry("a file name '..'", tool().SecretFile("..", "s", "k"), "spec.body.secretFiles[0].name", "should match"),
		Entry("a file name with a slash", tool().SecretFile("a/b", "s", "k"), "spec.body.secretFiles[0].name", "should match"),
		Entry("two files of one name", tool().SecretFile("f", "s", "k").SecretFile("f", "s", "k2"), "Duplicate value"),
		Entry("a Secret name that is no DNS subdomain", tool().SecretEnv("TOKEN", "Not_A_Name", "k"),
			"spec.body.env[0].valueFrom.secretKeyRef.name", "should match"),
		Entry("a key with a slash", tool().SecretFile("f", "s", "a/b"), "spec.body.secretFiles[0].secretKeyRef.key", "should match"),
		Entry("an empty key", tool().SecretEnv("TOKEN", "s", ""), "spec.body.env[0].valueFrom.secretKeyRef.key"),
		Entry("a warm pool with an env credential", tool().SecretEnv("TOKEN", "s", "k").WarmPool(1, 0),
			"a warm pool cannot serve a tool with credentials"),
		Entry("a warm pool with a secret file", tool().SecretFile("f", "s", "k").WarmPool(2, time.Minute),
			"a warm pool cannot serve a tool with credentials"),
	)

	It("rejects a variable that is both a literal and a credential", func(ctx SpecContext) {
		t := tool().SecretEnv("TOKEN", "s", "k").Obj()
		t.Namespace = ns
		t.Spec.Body.Env[0].Value = "plain"
		Expect(k8sClient.Create(ctx, t)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "value and valueFrom are exclusive"))
	})

	It("applies the same rules to a ClusterTool", func(ctx SpecContext) {
		ct := tgt.MakeClusterTool(fmt.Sprintf("ct-cred-%d", GinkgoParallelProcess())).SecretEnv("TOKEN", "s", "k").
			WarmPool(1, 0).WarmPoolNamespaces(ns).Obj()
		Expect(k8sClient.Create(ctx, ct)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "a warm pool cannot serve a tool with credentials"))
		ct.Spec.WarmPool = nil
		Expect(k8sClient.Create(ctx, ct)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8sClient.Delete(ctx, ct)).To(Succeed()) })
		stored := &toolgatev1alpha1.ClusterTool{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ct), stored)).To(Succeed())
		Expect(stored.Spec.Body.Env).To(HaveLen(1))
		Expect(stored.Spec.Body.Env[0].ValueFrom.SecretKeyRef).To(Equal(toolgatev1alpha1.CredentialKeySelector{Name: "s", Key: "k"}))
		Expect(stored.Spec.Body.Env[0].Value).To(BeEmpty())
	})
})
