package controller_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("A policy on the requester's groups", Label("policy", "groups"), func() {
	It("lets only members of a group call a tool: the groups come from the API server, not the client", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("deploy", Outcome{Echo: true})
		create(ctx, MakeTool("deploy", ns).Image("example/deploy:1").Command("/deploy").Obj(),
			MakeToolPolicy("deploy-by-platform", ns).Stage(v1alpha1.StagePreExecute).Tools("deploy").
				Rule(v1alpha1.PolicyRule{Name: "platform-only", Expression: `!("platform-admins" in call.requesterGroups)`,
					Verdict: v1alpha1.VerdictDeny, Message: "only platform-admins may deploy"}).Obj())
		member, err := env.AddUser("pat", []string{EditorsGroup, "platform-admins"})
		Expect(err).NotTo(HaveOccurred())
		outsider, err := env.AddUser("oscar", []string{EditorsGroup})
		Expect(err).NotTo(HaveOccurred())

		Expect(member.Create(ctx, MakeToolCall("by-member", ns).Tool("deploy").Args(map[string]any{}).Obj())).To(Succeed())
		// The outsider claims the group: the toolgate-requester policy replaces the claim.
		forged := MakeToolCall("by-outsider", ns).Tool("deploy").Requester("pat").Args(map[string]any{}).Obj()
		forged.Spec.RequesterGroups = []string{"platform-admins"}
		Expect(outsider.Create(ctx, forged)).To(Succeed())

		allowed := waitTerminal(ctx, ns, "by-member")
		Expect(allowed).To(HavePhase(v1alpha1.PhaseSucceeded), explain(allowed))
		Expect(allowed.Spec.Requester).To(Equal("pat"))
		Expect(allowed.Spec.RequesterGroups).To(ContainElements("platform-admins", EditorsGroup, "system:authenticated"))

		denied := waitTerminal(ctx, ns, "by-outsider")
		Expect(denied).To(HavePhase(v1alpha1.PhaseDenied), explain(denied))
		Expect(denied.Spec.Requester).To(Equal("oscar"), "stamped by the API server")
		Expect(denied.Spec.RequesterGroups).NotTo(ContainElement("platform-admins"))
		Expect(denied.Status.Result.Reason).To(Equal(v1alpha1.ReasonPolicyDenied))
		Expect(denied.Status.Result.Error).To(Equal("only platform-admins may deploy"))
	})
})
