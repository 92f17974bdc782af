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
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// toolgate-credentials: a tool may reference a Secret only when whoever creates it, or
// changes what runs with it or who may call it, may get that Secret (in the Tool's
// namespace; in every namespace for a ClusterTool).
var _ = Describe("The toolgate-credentials admission policy", Label("credentials", "admission"), func() {
	var (
		ns    string
		alice client.Client
	)
	// grant lets alice get the named Secrets: in ns (a Role), or everywhere (a ClusterRole).
	// It returns once the authorizer sees the grant: a dry-run create as alice of a Tool (a
	// ClusterTool) naming them is admitted.
	grant := func(ctx SpecContext, cluster bool, secrets ...string) {
		rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: secrets}}
		subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}
		name := "secrets-" + ns
		tool, clusterTool := tgt.MakeTool("probe", ns), tgt.MakeClusterTool("probe-"+ns)
		for i, secret := range secrets {
			tool.SecretEnv(fmt.Sprintf("S%d", i), secret, "k")
			clusterTool.SecretEnv(fmt.Sprintf("S%d", i), secret, "k")
		}
		var probe client.Object = tool.Obj()
		if cluster {
			role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
			binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
			Expect(k8sClient.Create(ctx, role)).To(Succeed())
			Expect(k8sClient.Create(ctx, binding)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) {
				Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, binding))).To(Succeed())
				Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, role))).To(Succeed())
			})
			probe = clusterTool.Obj()
		} else {
			role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: rules}
			binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
			Expect(k8sClient.Create(ctx, role)).To(Succeed())
			Expect(k8sClient.Create(ctx, binding)).To(Succeed())
		}
		Eventually(func() error { return alice.Create(ctx, probe.DeepCopyObject().(client.Object), client.DryRunAll) }).
			WithContext(ctx).Should(Succeed(), "the grant is in effect")
	}
	denied := func(substrings ...string) OmegaMatcher {
		matchers := []OmegaMatcher{Satisfy(tgt.IsCredentialPolicyDenial)}
		for _, s := range substrings {
			matchers = append(matchers, MatchError(ContainSubstring(s)))
		}
		return And(matchers...)
	}
	// authorChange is the part of a refused update's message that says why it was checked.
	const authorChange = ": changing what runs with a credential or who may call it"

	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		var err error
		alice, err = env.AddUser("alice", []string{tgt.EditorsGroup})
		Expect(err).NotTo(HaveOccurred())
	})

	It("admits a Tool whose author may get every Secret it names, and refuses one who may not", func(ctx SpecContext) {
		tool := tgt.MakeTool("t", ns).SecretEnv("TOKEN", "github", "token").SecretFile("conf", "deploy", "config").Obj()
		Expect(alice.Create(ctx, tool.DeepCopy())).To(denied(fmt.Sprintf("alice may not get Secret github in namespace %s: a tool can only use", ns)))
		grant(ctx, false, "github")
		Expect(alice.Create(ctx, tool.DeepCopy())).To(denied(fmt.Sprintf("alice may not get Secret deploy in namespace %s", ns)),
			"one of two is not enough")
	})

	It("checks the Secret of an egress credential, which the proxy injects, as any other: on create and on a change to what runs", func(ctx SpecContext) {
		tool := tgt.MakeTool("t", ns).EgressCredential("api.github.com", 443, "github", "token", "", "Bearer").EgressAllow("other.test", 443).Obj()
		Expect(alice.Create(ctx, tool.DeepCopy())).To(denied(fmt.Sprintf("alice may not get Secret github in namespace %s: a tool can only use", ns)),
			"the body never holds it, but the author chooses where it goes")
		Expect(k8sClient.Create(ctx, tool.DeepCopy())).To(Succeed(), "the admin makes it")
		sendElsewhere := func(t *toolgatev1alpha1.Tool) { t.Spec.Sandbox.Egress.Allow[0].Host = "collector.example" }
		fresh := &toolgatev1alpha1.Tool{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(tool), fresh)).To(Succeed())
		sendElsewhere(fresh)
		Expect(alice.Update(ctx, fresh.DeepCopy())).To(denied(fmt.Sprintf("alice may not get Secret github in namespace %s", ns), authorChange))
		grant(ctx, false, "github")
		Expect(alice.Update(ctx, fresh)).To(Succeed())
	})

	Context("on an update of a Tool naming a Secret its editor may not get", func() {
		var stored *toolgatev1alpha1.Tool
		BeforeEach(func(ctx SpecContext) {
			stored = tgt.MakeTool("t", ns).Description("reads issues").Env("MODE", "quiet").SecretEnv("TOKEN", "github", "token").
				Parameters(map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"enum": []string{"a/b"}}}}).Obj()
			Expect(k8sClient.Create(ctx, stored)).To(Succeed(), "the admin made it")
		})
		// update applies edit to the stored Tool and writes it as alice.
		update := func(ctx SpecContext, edit func(*toolgatev1alpha1.Tool)) error {
			fresh := &toolgatev1alpha1.Tool{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stored), fresh)).To(Succeed())
			edit(fresh)
			return alice.Update(ctx, fresh)
		}

		DescribeTable("refuses a change to what runs with it or who may call it, naming the Secret",
			func(ctx SpecContext, edit func(*toolgatev1alpha1.Tool)) {
				Expect(update(ctx, edit)).To(denied(fmt.Sprintf("alice may not get Secret github in namespace %s", ns), authorChange))
				after := &toolgatev1alpha1.Tool{}
				Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stored), after)).To(Succeed())
				Expect(after.Generation).To(Equal(stored.Generation), "the Tool is as the admin left it")
			},
			Entry("the image", func(t *toolgatev1alpha1.Tool) { t.Spec.Body.Image = "evil.example/printenv:1" }),
			Entry("the command", func(t *toolgatev1alpha1.Tool) {
				t.Spec.Body.Command = []string{"/bin/sh", "-c", `printf %s "$TOKEN" | rev`}
			}),
			Entry("the args", func(t *toolgatev1alpha1.Tool) { t.Spec.Body.Args = []string{"--dump-env"} }),
			Entry("an env literal", func(t *toolgatev1alpha1.Tool) { t.Spec.Body.Env[0].Value = "debug" }),
			Entry("the sandbox's network", func(t *toolgatev1alpha1.Tool) { t.Spec.Sandbox.Network = toolgatev1alpha1.NetworkEgress }),
			Entry("the sandbox's runtime class", func(t *toolgatev1alpha1.Tool) { t.Spec.Sandbox.RuntimeClassName = ptr.To("runc") }),
			Entry("the parameters schema", func(t *toolgatev1alpha1.Tool) { t.Spec.Parameters = nil }),
			Entry("the model-facing name", func(t *toolgatev1alpha1.Tool) { t.Spec.Name = "echo" }),
			Entry("the scope", func(t *toolgatev1alpha1.Tool) { t.Spec.Scope = "everyone" }),
		)

		// Comparing the old and new spec costs CEL in proportion to their size.
		It("refuses, naming the Secret, a change to a Tool near etcd's 1.5 MiB: the comparison stays within the CEL budget", func(ctx SpecContext) {
			pad := func(t *toolgatev1alpha1.Tool) {
				for i := range 40 {
					t.Spec.Body.Env = append(t.Spec.Body.Env, toolgatev1alpha1.EnvVar{Name: fmt.Sprintf("PAD%d", i), Value: strings.Repeat("x", 32768)})
				}
			}
			fresh := &toolgatev1alpha1.Tool{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stored), fresh)).To(Succeed())
			pad(fresh)
			Expect(k8sClient.Update(ctx, fresh)).To(Succeed(), "the admin pads its body with 40 literals of 32 KiB")
			Expect(update(ctx, func(t *toolgatev1alpha1.Tool) {
				t.Spec.Body.Env[len(t.Spec.Body.Env)-1].Value = strings.Repeat("y", 32768)
			})).To(denied(fmt.Sprintf("alice may not get Secret github in namespace %s", ns), authorChange))
			Expect(update(ctx, func(t *toolgatev1alpha1.Tool) { t.Spec.Description = "edited by alice" })).To(Succeed())
		})

		It("admits what only changes how it reads (description, labels, timeout) and an update that drops the credential", func(ctx SpecContext) {
			Expect(update(ctx, func(t *toolgatev1alpha1.Tool) { t.Spec.Description = "edited by alice" })).To(Succeed())
			Expect(update(ctx, func(t *toolgatev1alpha1.Tool) { metav1.SetMetaDataLabel(&t.ObjectMeta, "team", "alice") })).To(Succeed())
			Expect(update(ctx, func(t *toolgatev1alpha1.Tool) { t.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Minute} })).To(Succeed())
			Expect(update(ctx, func(t *toolgatev1alpha1.Tool) {
				t.Spec.Body.Env, t.Spec.Body.Image = t.Spec.Body.Env[:1], "example/other:1"
			})).To(Succeed(), "a Tool that names no Secret any more runs with none")
		})

		It("admits a change to what runs once the editor may get every Secret it names", func(ctx SpecContext) {
			Expect(update(ctx, func(t *toolgatev1alpha1.Tool) {
				t.Spec.Body.SecretFiles = []toolgatev1alpha1.SecretFile{{Name: "conf",
					SecretKeyRef: toolgatev1alpha1.CredentialKeySelector{Name: "deploy", Key: "config"}}}
			})).To(denied("alice may not get Secret github", authorChange), "adding a Secret is a change to what runs: every one is checked")
			grant(ctx, false, "github")
			Expect(update(ctx, func(t *toolgatev1alpha1.Tool) { t.Spec.Body.Image = "example/gh:2" })).To(Succeed())
		})
	})

	It("asks for a get in every namespace for a ClusterTool", func(ctx SpecContext) {
		ct := tgt.MakeClusterTool("cred-"+ns).SecretEnv("TOKEN", "github-"+ns, "token").Obj()
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ct))).To(Succeed()) })
		grant(ctx, false, "github-"+ns)
		Expect(alice.Create(ctx, ct.DeepCopy())).To(denied("alice may not get Secret github-"+ns+" in every namespace"),
			"a namespace's grant is not enough")
		grant(ctx, true, "github-"+ns)
		Expect(alice.Create(ctx, ct.DeepCopy())).To(Succeed())
	})

	It("asks for a get in every namespace to change what runs with a ClusterTool's Secret, not to describe it", func(ctx SpecContext) {
		ct := tgt.MakeClusterTool("cred-"+ns).SecretEnv("TOKEN", "github-"+ns, "token").Obj()
		Expect(k8sClient.Create(ctx, ct)).To(Succeed(), "the admin made it")
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ct))).To(Succeed()) })
		update := func(edit func(*toolgatev1alpha1.ClusterTool)) error {
			fresh := &toolgatev1alpha1.ClusterTool{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ct), fresh)).To(Succeed())
			edit(fresh)
			return alice.Update(ctx, fresh)
		}
		image := func(t *toolgatev1alpha1.ClusterTool) { t.Spec.Body.Image = "evil.example/printenv:1" }
		for what, edit := range map[string]func(*toolgatev1alpha1.ClusterTool){
			"the image":   image,
			"the command": func(t *toolgatev1alpha1.ClusterTool) { t.Spec.Body.Command = []string{"/bin/env"} },
			"the sandbox": func(t *toolgatev1alpha1.ClusterTool) { t.Spec.Sandbox.Network = toolgatev1alpha1.NetworkEgress },
		} {
			Expect(update(edit)).To(denied("alice may not get Secret github-"+ns+" in every namespace", authorChange), what)
		}
		Expect(update(func(t *toolgatev1alpha1.ClusterTool) { t.Spec.Description = "edited by alice" })).To(Succeed())
		grant(ctx, false, "github-"+ns)
		Expect(update(image)).To(denied("in every namespace"), "a namespace's grant is not enough")
		grant(ctx, true, "github-"+ns)
		Expect(update(image)).To(Succeed())
	})
})
