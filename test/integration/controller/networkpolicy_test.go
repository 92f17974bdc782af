package controller_test

import (
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/netisolation"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

// revision is an object's resourceVersion as a number: etcd's revision of its last write,
// which orders writes across objects (opaque by the API contract, exact against etcd).
func revision(o client.Object) int64 {
	GinkgoHelper()
	n, err := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return n
}

func getPolicy(ctx SpecContext, ns, name string) *networkingv1.NetworkPolicy {
	GinkgoHelper()
	p := &networkingv1.NetworkPolicy{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)).To(Succeed())
	return p
}

func expectRefusedUnisolated(ctx SpecContext, ns, name string) *v1alpha1.ToolCall {
	GinkgoHelper()
	call := waitTerminal(ctx, ns, name)
	Expect(call).To(HavePhase(v1alpha1.PhaseFailed), explain(call))
	Expect(call.Status.Result.IsError).To(BeTrue())
	Expect(call.Status.Result.Reason).To(Equal(v1alpha1.ReasonNetworkIsolationMissing))
	Expect(call).To(HaveCondition(v1alpha1.ConditionExecuted, metav1.ConditionFalse, v1alpha1.ReasonNetworkIsolationMissing))
	jobs := &batchv1.JobList{}
	Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
	Expect(jobs.Items).To(BeEmpty(), "no Job for a refused call")
	return call
}

var _ = Describe("Tool Pod NetworkPolicies (--network-policy=ensure, the default)", Label("networkpolicy"), func() {
	It("a call in a fresh namespace finds the deny and egress policies in place before its Job exists", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).
			Args(map[string]any{"text": "hi"}).Obj())
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))

		job := &batchv1.Job{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}, job)).To(Succeed())
		jobCreated := revision(job) // the Job's writes since (status, finalizer) only raise it
		for _, want := range netisolation.ToolNetworkPolicies(ns, netisolation.DefaultEgressExcept()) {
			got := getPolicy(ctx, ns, want.Name)
			Expect(got.Spec).To(Equal(want.Spec), want.Name)
			Expect(got.Labels).To(HaveKeyWithValue(podcontract.LabelManagedBy, podcontract.ManagedByValue))
			Expect(revision(got)).To(BeNumerically("<", jobCreated), "%s written before the Job", want.Name)
			Expect(got.Generation).To(BeNumerically("==", 1), "written once")
		}
	})

	It("puts back a policy whose spec was opened up, before the next Job", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		opened := netisolation.ToolNetworkPolicies(ns, nil)[0]
		opened.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}} // allow all egress
		create(ctx, opened, echoTool(ns).Obj(), MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).
			Args(map[string]any{"text": "hi"}).Obj())
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(getPolicy(ctx, ns, netisolation.DenyAllPolicyName).Spec.Egress).To(BeEmpty())
	})

	It("refuses a network None call when another policy in the namespace allows its Pods egress", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		allowAll := &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "allow-all-egress", Namespace: ns},
			Spec: networkingv1.NetworkPolicySpec{
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress:      []networkingv1.NetworkPolicyEgressRule{{}},
			},
		}
		create(ctx, allowAll, echoTool(ns).Obj(), MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).
			Args(map[string]any{"text": "hi"}).Obj())
		call := expectRefusedUnisolated(ctx, ns, "c")
		Expect(call).To(HaveCondition(v1alpha1.ConditionExecuted, metav1.ConditionFalse, v1alpha1.ReasonNetworkIsolationMissing))
		Expect(conditionMessage(call, v1alpha1.ConditionExecuted)).To(ContainSubstring("allow-all-egress allows egress"))
	})
})

var _ = Describe("Tool Pod NetworkPolicies (--network-policy=require)", Label("networkpolicy", "restart"), Serial, func() {
	BeforeEach(func() {
		Expect(mgr.Stop()).To(Succeed())
		mgr = suite.StartManager(env, ManagerOptions{Clock: fakeClock, Kubelet: kubelet,
			Call: CallOptions{NetworkPolicy: string(netisolation.Require)}})
		DeferCleanup(func() {
			Expect(mgr.Stop()).To(Succeed())
			startManager()
		})
	})

	It("refuses a call in a namespace without policies, writes none, and runs it once the platform provides them", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).
			Args(map[string]any{"text": "hi"}).Obj())
		expectRefusedUnisolated(ctx, ns, "c")
		policies := &networkingv1.NetworkPolicyList{}
		Expect(k8sClient.List(ctx, policies, client.InNamespace(ns))).To(Succeed())
		Expect(policies.Items).To(BeEmpty(), "require mode writes no policy")

		// The platform's own default-deny of every Pod isolates network None tools.
		create(ctx, &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "platform-default-deny", Namespace: ns},
			Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{
				networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}},
		}, MakeToolCall("d", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "hi"}).Obj())
		call := waitTerminal(ctx, ns, "d")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
	})
})

// conditionMessage is the message of a call's condition.
func conditionMessage(call *v1alpha1.ToolCall, condType string) string {
	for _, c := range call.Status.Conditions {
		if c.Type == condType {
			return c.Message
		}
	}
	return ""
}
