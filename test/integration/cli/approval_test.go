package cli_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/cli"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("toolgate approve and deny", Label("approval"), func() {
	var ns string

	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(),
			MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).
				Rule(v1alpha1.PolicyRule{Name: "deploys", Expression: `arguments.text == "deploy"`, Verdict: v1alpha1.VerdictAsk, Message: "deploying needs a human"}).Obj())
	})

	// parked starts `call --wait` as alice and waits until it says the call is parked.
	parked := func(ctx SpecContext) (call *v1alpha1.ToolCall, out, errOut *gbytes.Buffer, code <-chan int) {
		out, errOut, code = background(ctx, "alice", ns, "call", "echo", "text=deploy", "--wait")
		Eventually(errOut).Should(gbytes.Say(`AwaitingApproval +deploying needs a human \(denied at \S+Z unless answered\)`))
		call = onlyCall(ctx, ns, v1alpha1.PhaseAwaitingApproval)
		Eventually(errOut).Should(gbytes.Say("call " + call.Name + " awaits approval: an approver runs `toolgate approve " + call.Name + " -n " + ns + "`"))
		return call, out, errOut, code
	}

	It("approve shows the request, asks, and the waiting call then runs and exits 0", func(ctx SpecContext) {
		call, out, _, code := parked(ctx)
		r := toolgate(ctx, "bob", ns, "y\n", "approve", call.Name, "--reason", "ticket 4711")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		Expect(r.Out).To(HavePrefix("Arguments (canonical JSON, " + call.Status.ArgumentsDigest + "):\n  {\"text\":\"deploy\"}\n"))
		Expect(r.Out).To(ContainSubstring("Requester:     alice\n"))
		Expect(r.Out).To(ContainSubstring("Asked because: deploying needs a human\nDeadline:      "))
		Expect(r.Out).To(ContainSubstring(")\nApprove? [y/N] "))
		Expect(r.Out).To(HaveSuffix("Approved call " + call.Name + " as bob (ToolCallApproval " + ns + "/" + call.Name + ").\n"))

		Eventually(code).WithContext(ctx).WithTimeout(LongTimeout).Should(Receive(Equal(cli.ExitOK))) // the approved call runs its Job
		Expect(out.Contents()).To(MatchJSON(`{"text": "deploy"}`))
		approval := &v1alpha1.ToolCallApproval{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: call.Name}, approval)).To(Succeed())
		Expect(approval.Spec).To(Equal(v1alpha1.ToolCallApprovalSpec{CallUID: string(call.UID), Decision: v1alpha1.DecisionApprove,
			ArgumentsDigest: call.Status.ArgumentsDigest, Approver: "bob", Reason: "ticket 4711"}))
		expectOwnedBy(approval, call)
	})

	It("binds the answer to the call shown: an approval left by an earlier call of the same name is explained, deleted and answered again", func(ctx SpecContext) {
		bindShippedRole(ctx, ns, ApproverRole, "carol")
		carol, err := env.AddUser("carol", nil)
		Expect(err).NotTo(HaveOccurred())
		alice, err := env.AddUser("alice", []string{EditorsGroup})
		Expect(err).NotTo(HaveOccurred())
		parkedAs := func() *v1alpha1.ToolCall {
			Expect(alice.Create(ctx, MakeToolCall("again", ns).Tool("echo").Requester("alice").Args(map[string]any{"text": "deploy"}).Obj())).To(Succeed())
			return onlyCall(ctx, ns, v1alpha1.PhaseAwaitingApproval)
		}
		first := parkedAs()
		r := toolgate(ctx, "carol", ns, "", "approve", first.Name, "--yes")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		approval := &v1alpha1.ToolCallApproval{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(first), approval)).To(Succeed())
		Expect(approval.Spec.CallUID).To(Equal(string(first.UID)))
		expectOwnedBy(approval, first)
		onlyCall(ctx, ns, v1alpha1.PhaseSucceeded)

		By("the agent deletes the call and creates it again; the old approval is still there (no garbage collector here)")
		Expect(alice.Delete(ctx, first)).To(Succeed())
		Eventually(func() []v1alpha1.ToolCall { return calls(ctx, ns) }).WithContext(ctx).Should(BeEmpty())
		again := parkedAs()
		Expect(again.UID).NotTo(Equal(first.UID))

		r = toolgate(ctx, "carol", ns, "", "approve", again.Name, "--yes")
		Expect(r.Code).To(Equal(cli.ExitFailure))
		Expect(r.ErrOut).To(Equal("error: ToolCallApproval " + ns + "/again answers an earlier call of the same name (uid " + string(first.UID) +
			"), not this one (uid " + string(again.UID) + "), and does not count for it; delete it (kubectl -n " + ns +
			" delete toolcallapproval again) and answer again\n"))

		By("the approver deletes it, as the message says, and answers the new call")
		Expect(carol.Delete(ctx, approval)).To(Succeed())
		Eventually(func() int { return toolgate(ctx, "carol", ns, "", "approve", again.Name, "--yes").Code }).WithContext(ctx).Should(Equal(cli.ExitOK))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(again), approval)).To(Succeed())
		Expect(approval.Spec.CallUID).To(Equal(string(again.UID)))
		expectOwnedBy(approval, again)
	})

	It("deny --yes ends the waiting call Denied, and it exits 2", func(ctx SpecContext) {
		call, out, _, code := parked(ctx)
		r := toolgate(ctx, "bob", ns, "", "deny", call.Name, "--yes", "--reason", "not today")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		Expect(r.Out).NotTo(ContainSubstring("[y/N]"))
		Expect(r.Out).To(HaveSuffix("Denied call " + call.Name + " as bob (ToolCallApproval " + ns + "/" + call.Name + ").\n"))

		Eventually(code).WithContext(ctx).Should(Receive(Equal(cli.ExitDenied)))
		Expect(string(out.Contents())).To(HavePrefix("error: ApprovalDenied: "))
		Expect(string(out.Contents())).To(ContainSubstring("not today"))
	})

	It("refuses a self-approval, writing nothing; the call keeps waiting", func(ctx SpecContext) {
		call, _, _, code := parked(ctx)
		r := toolgate(ctx, "alice", ns, "", "approve", call.Name, "--yes")
		Expect(r.Code).To(Equal(cli.ExitForbidden))
		Expect(r.ErrOut).To(Equal("error: you (alice) requested call " + call.Name + ": someone else must approve it (toolgate refuses a self-approval)\n"))
		expectNoApproval(ctx, ns, call.Name)
		Consistently(code).WithTimeout(ConsistentDuration).ShouldNot(Receive())
	})

	It("writes nothing unless the prompt is answered yes", func(ctx SpecContext) {
		call, _, _, _ := parked(ctx)
		r := toolgate(ctx, "bob", ns, "n\n", "approve", call.Name)
		Expect(r.Code).To(Equal(cli.ExitFailure))
		Expect(r.ErrOut).To(Equal("error: not confirmed: nothing was written\n"))
		r = toolgate(ctx, "bob", ns, "", "approve", call.Name)
		Expect(r.Code).To(Equal(cli.ExitFailure))
		Expect(r.ErrOut).To(ContainSubstring("no answer on stdin: nothing was written (use --yes"))
		expectNoApproval(ctx, ns, call.Name)
	})

	It("refuses clearly when the call is not awaiting approval, or there is no such call", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "call", "echo", "text=hi", "--wait")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		call := onlyCall(ctx, ns, v1alpha1.PhaseSucceeded)
		r = toolgate(ctx, "bob", ns, "", "approve", call.Name, "--yes")
		Expect(r.Code).To(Equal(cli.ExitFailure))
		Expect(r.ErrOut).To(Equal("error: call " + call.Name + " is not awaiting approval (phase Succeeded): there is nothing to approve\n"))
		r = toolgate(ctx, "bob", ns, "", "deny", "no-such-call", "--yes")
		Expect(r.Code).To(Equal(cli.ExitFailure))
		Expect(r.ErrOut).To(Equal(`error: toolcalls.toolgate.dev no-such-call not found in namespace "` + ns + `"` + "\n"))
	})

	It("works with the shipped roles: an agent calls, an approver approves, the agent may not", func(ctx SpecContext) {
		bindShippedRole(ctx, ns, AgentRole, "robot")
		bindShippedRole(ctx, ns, ApproverRole, "carol")
		_, errOut, code := background(ctx, "robot", ns, "call", "echo", "text=deploy", "--wait")
		Eventually(errOut).Should(gbytes.Say("awaits approval"))
		call := onlyCall(ctx, ns, v1alpha1.PhaseAwaitingApproval)
		Expect(call.Spec.Requester).To(Equal("robot"))

		r := toolgate(ctx, "robot", ns, "", "deny", call.Name, "--yes")
		Expect(r.Code).To(Equal(cli.ExitForbidden))
		Expect(r.ErrOut).To(Equal(`error: you may not create toolcallapprovals.toolgate.dev in namespace "` + ns + `" (as robot)` + "\n"))

		r = toolgate(ctx, "carol", ns, "", "approve", call.Name, "--yes")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		Eventually(code).WithContext(ctx).WithTimeout(LongTimeout).Should(Receive(Equal(cli.ExitOK))) // the approved call runs its Job
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(call), call)).To(Succeed())
		Expect(call).To(HaveCondition(v1alpha1.ConditionAdmitted, metav1.ConditionTrue, v1alpha1.ReasonApproved))
	})
})

// expectOwnedBy checks the approval's one ownerReference: to call, neither its controller
// nor blocking its deletion (the approver needs no more than read access to the call).
func expectOwnedBy(approval *v1alpha1.ToolCallApproval, call *v1alpha1.ToolCall) {
	GinkgoHelper()
	no := false
	Expect(approval.OwnerReferences).To(Equal([]metav1.OwnerReference{{APIVersion: "toolgate.dev/v1alpha1", Kind: "ToolCall",
		Name: call.Name, UID: call.UID, Controller: &no, BlockOwnerDeletion: &no}}))
}

func expectNoApproval(ctx SpecContext, ns, name string) {
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.ToolCallApproval{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a ToolCallApproval %s exists (or: %v)", name, err)
}
