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
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// toolgate-credentials: a tool may reference a Secret only when whoever creates or updates
// it may get that Secret (in the Tool's namespace; in every namespace for a ClusterTool).
var _ = Describe("The toolgate-credentials admission policy", Label("credentials", "admission"), func() {
	var (
		ns    string
		alice client.Client
	)
	// grant lets alice get the named Secrets: in ns (a Role), or everywhere (a ClusterRole).
	grant := func(ctx SpecContext, cluster bool, secrets ...string) {
		rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: secrets}}
		subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}
		name := "secrets-" + ns
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
			return
		}
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: rules}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
		Expect(k8sClient.Create(ctx, role)).To(Succeed())
		Expect(k8sClient.Create(ctx, binding)).To(Succeed())
	}
	denied := func(substrings ...string) OmegaMatcher {
		return And(Satisfy(apierrors.IsForbidden), MatchError(ContainSubstring("toolgate-credentials")),
			MatchError(ContainSubstring(substrings[0])))
	}

	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		var err error
		alice, err = env.AddUser("alice", []string{tgt.EditorsGroup})
		Expect(err).NotTo(HaveOccurred())
	})

	It("admits a Tool whose author may get every Secret it names, and refuses one who may not", func(ctx SpecContext) {
		tool := tgt.MakeTool("t", ns).SecretEnv("TOKEN", "github", "token").SecretFile("conf", "deploy", "config").Obj()
		Eventually(func() error { return alice.Create(ctx, tool.DeepCopy()) }).WithContext(ctx).WithTimeout(30 * time.Second).
			Should(denied(fmt.Sprintf("alice may not get Secret github in namespace %s", ns)))
		grant(ctx, false, "github")
		Eventually(func() error { return alice.Create(ctx, tool.DeepCopy()) }).WithContext(ctx).WithTimeout(30*time.Second).
			Should(denied(fmt.Sprintf("alice may not get Secret deploy in namespace %s", ns)), "one of two is not enough")
	})

	It("checks only references an update adds, and a Tool without credentials never", func(ctx SpecContext) {
		Expect(alice.Create(ctx, tgt.MakeTool("plain", ns).Env("MODE", "fast").Obj())).To(Succeed(), "no credentials: no Secret access needed")
		Expect(k8sClient.Create(ctx, tgt.MakeTool("t", ns).SecretEnv("TOKEN", "github", "token").Obj())).To(Succeed(), "the admin made it")
		stored := &toolgatev1alpha1.Tool{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "t"}, stored)).To(Succeed())
		stored.Spec.Description = "edited by alice"
		Expect(alice.Update(ctx, stored)).To(Succeed(), "an unchanged reference is not checked again")
		stored.Spec.Body.SecretFiles = tgt.MakeTool("x", ns).SecretFile("conf", "deploy", "config").Obj().Spec.Body.SecretFiles
		Expect(alice.Update(ctx, stored)).To(denied(fmt.Sprintf("alice may not get Secret deploy in namespace %s", ns)))
	})

	It("asks for a get in every namespace for a ClusterTool", func(ctx SpecContext) {
		ct := tgt.MakeClusterTool("cred-"+ns).SecretEnv("TOKEN", "github-"+ns, "token").Obj()
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ct))).To(Succeed()) })
		grant(ctx, false, "github-"+ns)
		Eventually(func() error { return alice.Create(ctx, ct.DeepCopy()) }).WithContext(ctx).WithTimeout(30*time.Second).
			Should(denied("alice may not get Secret github-"+ns+" in every namespace"), "a namespace's grant is not enough")
		grant(ctx, true, "github-"+ns)
		Eventually(func() error { return alice.Create(ctx, ct.DeepCopy()) }).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})
})
