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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/config/admission"
	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

const (
	requesterMessage = "spec.requester must be the authenticated user"
	approverMessage  = "spec.approver must be the authenticated user"
	groupsMessage    = "spec.requesterGroups must be the authenticated user's groups"
	ownerMessage     = "an ownerReference to a ToolCall must name the call this approval answers"
	// someCallUID is the callUID of approvals that answer no call of the spec.
	someCallUID = "6c1d4d0e-0000-4000-8000-000000000001"
)

var _ = Describe("Identity admission policy", Label("admission", "identity"), func() {
	var (
		ns    string
		alice client.Client
	)
	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		var err error
		alice, err = env.AddUser("alice", []string{tgt.EditorsGroup})
		Expect(err).NotTo(HaveOccurred())
	})

	It("is installed with failurePolicy Fail and a Deny binding", func(ctx SpecContext) {
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: admission.IdentityPolicyName}, policy)).To(Succeed())
		Expect(*policy.Spec.FailurePolicy).To(Equal(admissionregistrationv1.Fail))
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: admission.IdentityPolicyName}, binding)).To(Succeed())
		Expect(binding.Spec.ValidationActions).To(ConsistOf(admissionregistrationv1.Deny))
	})

	It("stamps the authenticated user as the requester, whatever the client sent", func(ctx SpecContext) {
		By("a forged requester and forged groups")
		forged := tgt.MakeToolCall("forged", ns).Requester("bob").Obj()
		forged.Spec.RequesterGroups = []string{"system:masters", "platform-admins"}
		Expect(alice.Create(ctx, forged)).To(Succeed())
		Expect(forged.Spec.Requester).To(Equal("alice"))
		Expect(forged.Spec.RequesterGroups).To(ConsistOf(tgt.EditorsGroup, "system:authenticated"))

		By("no requester at all")
		empty := tgt.MakeToolCall("empty", ns).Requester("").Obj()
		Expect(alice.Create(ctx, empty)).To(Succeed())
		stored := &toolgatev1alpha1.ToolCall{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(empty), stored)).To(Succeed())
		Expect(stored.Spec.Requester).To(Equal("alice"))
		Expect(stored.Spec.RequesterGroups).To(ConsistOf(tgt.EditorsGroup, "system:authenticated"))
	})

	It("applies to system:masters too", func(ctx SpecContext) {
		tc := tgt.MakeToolCall("c", ns).Requester("alice").Obj()
		Expect(k8sClient.Create(ctx, tc)).To(Succeed())
		Expect(tc.Spec.Requester).To(Equal(tgt.AdminUser))
		Expect(tc.Spec.RequesterGroups).To(ContainElement("system:masters"))
	})

	It("stamps the authenticated user as the approver, whatever the client sent", func(ctx SpecContext) {
		a := tgt.MakeToolCallApproval("c", ns).Approver("bob").CallUID(someCallUID).Deny().Obj()
		Expect(alice.Create(ctx, a)).To(Succeed())
		Expect(a.Spec.Approver).To(Equal("alice"))
		b := tgt.MakeToolCallApproval("d", ns).Approver("").CallUID(someCallUID).Deny().Obj()
		Expect(alice.Create(ctx, b)).To(Succeed())
		Expect(b.Spec.Approver).To(Equal("alice"))
	})

	It("lets another user update a call's metadata and status, never its requester", func(ctx SpecContext) {
		tc := tgt.MakeToolCall("c", ns).Requester("alice").Obj()
		Expect(alice.Create(ctx, tc)).To(Succeed())

		By("the admin (as the controller would) adding a finalizer and writing status")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(tc), tc)).To(Succeed())
		tc.Finalizers = append(tc.Finalizers, "toolgate.dev/test")
		Expect(k8sClient.Update(ctx, tc)).To(Succeed())
		Expect(writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) { st.Phase = toolgatev1alpha1.PhasePending })).To(Succeed())

		By("anyone changing the requester")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(tc), tc)).To(Succeed())
		tc.Spec.Requester = tgt.AdminUser
		Expect(k8sClient.Update(ctx, tc)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec is immutable"))

		By("alice removing the finalizer")
		Expect(alice.Get(ctx, client.ObjectKeyFromObject(tc), tc)).To(Succeed())
		tc.Finalizers = nil
		Expect(alice.Update(ctx, tc)).To(Succeed())
	})

	It("admits an approval owned by the call it answers, and no other owner call", func(ctx SpecContext) {
		call := tgt.MakeToolCall("c", ns).Requester("alice").Obj()
		Expect(alice.Create(ctx, call)).To(Succeed())
		other := tgt.MakeToolCall("other", ns).Requester("alice").Obj()
		Expect(alice.Create(ctx, other)).To(Succeed())

		By("an ownerReference to another call's uid")
		a := tgt.MakeToolCallApproval("c", ns).Approver("alice").For(call).Obj()
		a.OwnerReferences[0].UID = other.UID
		Expect(alice.Create(ctx, a)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, admission.IdentityPolicyName, ownerMessage))

		By("an ownerReference to another call's name")
		a = tgt.MakeToolCallApproval("c", ns).Approver("alice").For(call).Obj()
		a.OwnerReferences[0].Name = other.Name
		Expect(alice.Create(ctx, a)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, ownerMessage))

		By("an ownerReference to the call it answers")
		a = tgt.MakeToolCallApproval("c", ns).Approver("alice").For(call).Obj()
		Expect(alice.Create(ctx, a)).To(Succeed())

		By("adding an ownerReference to another call later (as the admin)")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), a)).To(Succeed())
		ref := a.OwnerReferences[0]
		ref.Name, ref.UID = other.Name, other.UID
		a.OwnerReferences = append(a.OwnerReferences, ref)
		Expect(k8sClient.Update(ctx, a)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, ownerMessage))

		By("removing the ownerReference (as garbage collection does when orphaning)")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), a)).To(Succeed())
		a.OwnerReferences = nil
		Expect(k8sClient.Update(ctx, a)).To(Succeed())
	})

	It("stamps service accounts by their full user name", func(ctx SpecContext) {
		agent, err := env.AddUser("system:serviceaccount:agents:coder", []string{tgt.EditorsGroup})
		Expect(err).NotTo(HaveOccurred())
		tc := tgt.MakeToolCall("short", ns).Requester("coder").Obj()
		Expect(agent.Create(ctx, tc)).To(Succeed())
		Expect(tc.Spec.Requester).To(Equal("system:serviceaccount:agents:coder"))
	})
})

// The identity policy is the second line: with the stamp policies' bindings removed, it
// alone refuses a create whose identity fields are not the user's. Serial: it changes the
// API server's admission for every spec while it runs.
var _ = Describe("Identity admission policy without the stamp policies", Serial, Ordered, Label("admission", "identity"), func() {
	var (
		ns    string
		alice client.Client
	)
	BeforeAll(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		var err error
		alice, err = env.AddUser("alice", []string{tgt.EditorsGroup})
		Expect(err).NotTo(HaveOccurred())
		var removed []*admissionregistrationv1.MutatingAdmissionPolicyBinding
		for _, name := range []string{admission.RequesterPolicyName, admission.ApproverPolicyName} {
			binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, binding)).To(Succeed())
			Expect(k8sClient.Delete(ctx, binding)).To(Succeed())
			removed = append(removed, binding)
		}
		DeferCleanup(func(ctx SpecContext) {
			for _, binding := range removed {
				binding.ResourceVersion, binding.UID = "", ""
				Expect(k8sClient.Create(ctx, binding)).To(Succeed())
			}
			By("waiting until the stamp policies stamp again")
			Eventually(func(g Gomega) {
				call := tgt.MakeToolCall("probe", ns).Requester("bob").Obj()
				a := tgt.MakeToolCallApproval("probe", ns).Approver("bob").CallUID(someCallUID).Obj()
				g.Expect(alice.Create(ctx, call, client.DryRunAll)).To(Succeed())
				g.Expect(call.Spec.Requester).To(Equal("alice"))
				g.Expect(alice.Create(ctx, a, client.DryRunAll)).To(Succeed())
				g.Expect(a.Spec.Approver).To(Equal("alice"))
			}).Should(Succeed())
		})
		By("waiting until nothing stamps")
		Eventually(func() error {
			return alice.Create(ctx, tgt.MakeToolCall("probe", ns).Requester("bob").Obj(), client.DryRunAll)
		}).Should(tgt.BeAPIError(metav1.StatusReasonForbidden, admission.IdentityPolicyName, requesterMessage))
	})

	It("rejects a ToolCall whose requester is another user", func(ctx SpecContext) {
		err := alice.Create(ctx, tgt.MakeToolCall("c", ns).Requester("bob").Obj())
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonForbidden, admission.IdentityPolicyName, requesterMessage))
		Expect(tgt.IsIdentityPolicyDenial(err)).To(BeTrue())
	})

	It("rejects a ToolCall whose groups are not the user's", func(ctx SpecContext) {
		tc := tgt.MakeToolCall("c", ns).Requester("alice").Obj()
		tc.Spec.RequesterGroups = []string{"system:masters"}
		Expect(alice.Create(ctx, tc)).To(tgt.BeAPIError(metav1.StatusReasonForbidden, admission.IdentityPolicyName, groupsMessage))
	})

	It("admits a ToolCall whose requester is the user and that names no groups", func(ctx SpecContext) {
		tc := tgt.MakeToolCall("c", ns).Requester("alice").Obj()
		Expect(alice.Create(ctx, tc)).To(Succeed())
		Expect(tc.Spec.RequesterGroups).To(BeEmpty())
	})

	It("rejects a ToolCallApproval whose approver is another user", func(ctx SpecContext) {
		err := alice.Create(ctx, tgt.MakeToolCallApproval("c", ns).Approver("bob").CallUID(someCallUID).Obj())
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonForbidden, admission.IdentityPolicyName, approverMessage))
	})

	It("rejects a ToolCall and a ToolCallApproval that name nobody (the schema does not require them)", func(ctx SpecContext) {
		err := alice.Create(ctx, tgt.MakeToolCall("nobody", ns).Requester("").Obj())
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonForbidden, admission.IdentityPolicyName, requesterMessage))
		err = alice.Create(ctx, tgt.MakeToolCallApproval("nobody", ns).Approver("").CallUID(someCallUID).Obj())
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonForbidden, admission.IdentityPolicyName, approverMessage))
	})

	It("applies to system:masters too", func(ctx SpecContext) {
		err := k8sClient.Create(ctx, tgt.MakeToolCall("c2", ns).Requester("alice").Obj())
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonForbidden, requesterMessage))
	})
})
