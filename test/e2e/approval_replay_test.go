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

package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// replayArgs asks for approval under the demo's sh-network-needs-approval policy ("ping"
// ends the command) without touching the network.
var replayArgs = map[string]any{"command": "echo approved once, not twice: ping"}

// The replay: an agent deletes an approved call and creates it again under the same name
// with the same arguments. The old approval must not let it run: it goes with its call
// (garbage collection, by its ownerReference) or, when it has no owner, the operator refuses
// it for the new call (ApprovalCallMismatch). Either way the new call waits for a new answer.
var _ = Describe("an approval answers one call, once", Label("approval", "replay"), func() {
	It("goes with its call: the recreated call waits for a new answer, and runs once given one", func(ctx SpecContext) {
		name := "e2e-replay-" + utilrand.String(5)
		first := createNamedCall(ctx, name)
		approveAs(ctx, toolgatetest.MakeToolCallApproval(name, demoNS).For(first))
		ran := waitTerminal(ctx, first, callTimeout)
		Expect(ran).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
		Expect(jobsOwnedBy(ctx, first)).To(HaveLen(1))

		again := deleteAndCreateAgain(ctx, first)

		By("the old approval is garbage-collected with its call")
		Eventually(func() bool {
			return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, &toolgatev1alpha1.ToolCallApproval{}))
		}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(poll).Should(BeTrue())
		expectStillWaiting(ctx, again)

		answerAgain(ctx, again)
	}, SpecTimeout(5*time.Minute))

	It("without an owner it survives its call and is refused for the recreated one; the approver deletes it", func(ctx SpecContext) {
		name := "e2e-replay-" + utilrand.String(5)
		first := createNamedCall(ctx, name)
		// As an approval written by hand (kubectl create) without an ownerReference.
		approveAs(ctx, toolgatetest.MakeToolCallApproval(name, demoNS).CallUID(first.UID).ArgumentsDigest(first.Status.ArgumentsDigest))
		ran := waitTerminal(ctx, first, callTimeout)
		Expect(ran).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))

		again := deleteAndCreateAgain(ctx, first)

		By("the operator refuses the old approval for the new call")
		Eventually(func(g Gomega) {
			a := &toolgatev1alpha1.ToolCallApproval{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, a)).To(Succeed())
			g.Expect(a.Spec.CallUID).To(Equal(string(first.UID)))
			g.Expect(a).To(toolgatetest.HaveCondition(toolgatev1alpha1.ConditionConsumed, metav1.ConditionFalse,
				toolgatev1alpha1.ReasonApprovalCallMismatch))
			g.Expect(a.Status.ConsumedBy).To(Equal(string(first.UID)))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
		expectStillWaiting(ctx, again)

		By("the approver role may delete the refused approval")
		Expect(approver.Delete(ctx, toolgatetest.MakeToolCallApproval(name, demoNS).Obj())).To(Succeed())
		answerAgain(ctx, again)
	}, SpecTimeout(5*time.Minute))
})

// createNamedCall creates an sh call named name as the agent user and waits until it is
// parked for approval; it deletes the call and its approval when the spec ends.
func createNamedCall(ctx context.Context, name string) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	call := toolgatetest.MakeToolCall(name, demoNS).Tool("sh").Scope(demoScope).Requester("agent").
		Args(replayArgs).Label(e2eLabel, "true").Obj()
	Expect(agent.Create(ctx, call)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		key := client.ObjectKey{Namespace: demoNS, Name: name}
		Expect(client.IgnoreNotFound(admin.Delete(ctx, &toolgatev1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}))).To(Succeed())
		Expect(client.IgnoreNotFound(admin.Delete(ctx, &toolgatev1alpha1.ToolCallApproval{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}))).To(Succeed())
	})
	return waitParked(ctx, call)
}

// waitParked waits until the call (by name) is AwaitingApproval and returns it.
func waitParked(ctx context.Context, call *toolgatev1alpha1.ToolCall) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	parked := &toolgatev1alpha1.ToolCall{}
	Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(call), parked)).To(Succeed())
		g.Expect(parked).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseAwaitingApproval))
		g.Expect(parked.Status.ArgumentsDigest).NotTo(BeEmpty())
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
	return parked
}

// approveAs creates the answer (an approval, or a denial) as the approver user.
func approveAs(ctx context.Context, w *toolgatetest.ToolCallApprovalWrapper) {
	GinkgoHelper()
	Expect(approver.Create(ctx, w.Approver("approver").Reason("e2e: the approver user's answer").Obj())).To(Succeed())
}

// deleteAndCreateAgain deletes the call (as the admin: the shipped agent role may not
// delete calls, but retention or an admin does, and the name is then free), waits until it
// and its Jobs are gone, has the agent create it again under the same name with the same
// arguments and waits until it is parked.
func deleteAndCreateAgain(ctx context.Context, first *toolgatev1alpha1.ToolCall) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	By("the call is deleted and the agent creates it again under the same name")
	Expect(admin.Delete(ctx, first)).To(Succeed())
	Eventually(func(g Gomega) {
		err := admin.Get(ctx, client.ObjectKeyFromObject(first), &toolgatev1alpha1.ToolCall{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the call is still there: %v", err)
		// Its Job goes by garbage collection; the new call's Job would take the same name.
		g.Expect(jobsOf(ctx, first)).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(poll).Should(Succeed())
	again := toolgatetest.MakeToolCall(first.Name, demoNS).Tool("sh").Scope(demoScope).Requester("agent").
		Args(replayArgs).Label(e2eLabel, "true").Obj()
	Expect(agent.Create(ctx, again)).To(Succeed())
	parked := waitParked(ctx, again)
	Expect(parked.UID).NotTo(Equal(first.UID))
	Expect(parked.Status.ArgumentsDigest).To(Equal(first.Status.ArgumentsDigest))
	return parked
}

// expectStillWaiting checks that the recreated call keeps waiting and nothing runs for it.
func expectStillWaiting(ctx context.Context, again *toolgatev1alpha1.ToolCall) {
	GinkgoHelper()
	By("the recreated call does not run without a new approval")
	Consistently(func(g Gomega) {
		got := &toolgatev1alpha1.ToolCall{}
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(again), got)).To(Succeed())
		g.Expect(got.UID).To(Equal(again.UID))
		g.Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseAwaitingApproval))
		// The earlier call's Job and Pod may still be going (garbage collection is
		// asynchronous): what must not exist is anything of the recreated call.
		g.Expect(jobsOwnedBy(ctx, again)).To(BeEmpty())
		g.Expect(podsOwnedBy(ctx, again)).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(poll).Should(Succeed())
}

// answerAgain approves the recreated call as the approver user and checks that it runs once.
func answerAgain(ctx context.Context, again *toolgatev1alpha1.ToolCall) {
	GinkgoHelper()
	By("the approver answers the new call; it runs, once")
	Eventually(func() error {
		return approver.Create(ctx, toolgatetest.MakeToolCallApproval(again.Name, demoNS).For(again).
			Approver("approver").Reason("e2e: the new call").Obj())
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
	done := waitTerminal(ctx, again, callTimeout)
	Expect(done.UID).To(Equal(again.UID))
	Expect(done).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
	Expect(jobsOwnedBy(ctx, done)).To(HaveLen(1))
	a := &toolgatev1alpha1.ToolCallApproval{}
	Expect(admin.Get(ctx, client.ObjectKeyFromObject(done), a)).To(Succeed())
	Expect(a.Status.ConsumedBy).To(Equal(string(again.UID)))
}

// jobsOwnedBy lists the call's Jobs whose controller is this call (this uid).
func jobsOwnedBy(ctx context.Context, call *toolgatev1alpha1.ToolCall) []batchv1.Job {
	GinkgoHelper()
	var owned []batchv1.Job
	for _, j := range jobsOf(ctx, call) {
		if ref := metav1.GetControllerOf(&j); ref != nil && ref.UID == call.UID {
			owned = append(owned, j)
		}
	}
	return owned
}

// podsOwnedBy lists the Pods of the Jobs this call (by uid) controls, not those of an
// earlier call of the same name.
func podsOwnedBy(ctx context.Context, call *toolgatev1alpha1.ToolCall) []corev1.Pod {
	GinkgoHelper()
	jobs := map[types.UID]bool{}
	for _, j := range jobsOwnedBy(ctx, call) {
		jobs[j.UID] = true
	}
	var owned []corev1.Pod
	for _, p := range podsOf(ctx, call) {
		if ref := metav1.GetControllerOf(&p); ref != nil && jobs[ref.UID] {
			owned = append(owned, p)
		}
	}
	return owned
}
