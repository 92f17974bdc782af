package catalogue_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	tg "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// askPolicy parks every call of the namespace for approval.
func askPolicy(ns string) []client.Object {
	return []client.Object{tg.MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).
		VerdictRule("always", "true", v1alpha1.VerdictAsk).Obj()}
}

// waitParked waits until the row's call awaits approval and returns it.
func waitParked(ctx SpecContext, ns, name string) *v1alpha1.ToolCall {
	GinkgoHelper()
	call := &v1alpha1.ToolCall{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, call)).To(Succeed())
		g.Expect(call).To(tg.HavePhase(v1alpha1.PhaseAwaitingApproval), explain(call))
	}).WithContext(ctx).Should(Succeed())
	return call
}

// answerParked writes the row's approval for its parked call and checks how the API
// server and the operator took it.
func answerParked(ctx SpecContext, ns string, r row) {
	a := r.approval
	call := waitParked(ctx, ns, r.name())
	approver := approverClient(ctx, ns, a)
	if a.replay {
		call = replay(ctx, ns, r, approver, call)
	}
	w := tg.MakeToolCallApproval(r.name(), ns).Approver(a.user).For(call)
	if a.approver != "" {
		w.Approver(a.approver)
	}
	if a.callUID != "" {
		w.CallUID(types.UID(a.callUID))
		w.OwnerReferences = nil // an ownerReference must name the call the approval answers
	}
	if a.digest != "" {
		w.ArgumentsDigest(a.digest)
	}
	obj := w.Obj()
	if a.ownerName != "" {
		obj.OwnerReferences[0].Name = a.ownerName
	}
	err := approver.Create(ctx, obj)
	switch {
	case a.replay:
		Expect(apierrors.IsAlreadyExists(err)).To(BeTrue(), "the earlier call's approval holds the name: %v", err)
	case r.want.approvalRefused != "":
		expectRefused(err, r.want.approvalRefused, r.want.approvalMessage)
	default:
		Expect(err).NotTo(HaveOccurred(), "the approval's create")
	}
	if r.want.consumed != "" {
		Eventually(func(g Gomega) {
			got := &v1alpha1.ToolCallApproval{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.name()}, got)).To(Succeed())
			status := metav1.ConditionFalse
			if r.want.consumed == v1alpha1.ReasonApplied {
				status = metav1.ConditionTrue
			}
			g.Expect(got).To(tg.HaveCondition(v1alpha1.ConditionConsumed, status, r.want.consumed))
		}).WithContext(ctx).Should(Succeed())
	}
}

// approverClient provisions the approval's author: an editor, or a user bound to a shipped
// role in the namespace (the approver role by default).
func approverClient(ctx SpecContext, ns string, a *approval) client.Client {
	GinkgoHelper()
	if a.editor || a.user == tg.AdminUser {
		if a.user == tg.AdminUser {
			return k8sClient
		}
		return userClient(a.user)
	}
	role := a.role
	if role == "" {
		role = tg.ApproverRole
	}
	c, err := env.BindUserRole(ctx, ns, role, a.user)
	Expect(err).NotTo(HaveOccurred())
	return c
}

// replay answers and runs the parked call, deletes it (and, as the garbage collector
// would, its Job and Pod, but not the approval, as for one written without an owner),
// creates it again with the same name and arguments, and returns the new parked call.
func replay(ctx SpecContext, ns string, r row, approver client.Client, first *v1alpha1.ToolCall) *v1alpha1.ToolCall {
	GinkgoHelper()
	obj := tg.MakeToolCallApproval(r.name(), ns).Approver(r.approval.user).For(first).Obj()
	obj.OwnerReferences = nil
	Expect(approver.Create(ctx, obj)).To(Succeed())
	done := waitTerminal(ctx, ns, r.name())
	Expect(done).To(tg.HavePhase(v1alpha1.PhaseSucceeded), explain(done))
	Expect(k8sClient.Delete(ctx, done)).To(Succeed())
	Expect(k8sClient.DeleteAllOf(ctx, &batchv1.Job{}, client.InNamespace(ns),
		client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	Expect(k8sClient.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(done), &v1alpha1.ToolCall{}))
	}).WithContext(ctx).Should(BeTrue())
	Expect(postCall(ctx, r.caller(), ns, r.query, callBody(ns, r))).To(Succeed(), "the same call again")
	again := waitParked(ctx, ns, r.name())
	Expect(again.UID).NotTo(Equal(first.UID))
	return again
}
