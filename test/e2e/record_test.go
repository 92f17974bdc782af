package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/config/admission"
	"github.com/toolgate/toolgate/pkg/agentclient"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// The attack of issue 22: an ownerReference naming an object that does not exist has the
// garbage collector delete the call, its Job and Pod within seconds; a finalizer pins the
// call past retention forever.
const (
	danglingOwner = `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"e2e-gone","uid":"00000000-0000-4000-8000-00000000dead"}]}}`
	pinFinalizer  = `{"metadata":{"finalizers":["example.com/pin"]}}`
)

var _ = Describe("whose record a call is", Label("identity", "record"), func() {
	It("refuses the agent's and another user's ownerReference and finalizer on a running call; it runs on", func(ctx SpecContext) {
		createTool(ctx, longSleepTool())
		call := createCall(ctx, longSleep, "", map[string]any{"seconds": 600})
		Eventually(func(g Gomega) {
			got := &toolgatev1alpha1.ToolCall{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(call), got)).To(Succeed())
			g.Expect(runningPod(ctx, g, got)).To(BeTrue(), "the body runs in a real Pod")
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())

		for _, who := range []struct {
			name string
			c    client.Client
		}{{"agent (its own call)", agent}, {"approver (another user's call)", approver}} {
			for _, patch := range []string{danglingOwner, pinFinalizer} {
				err := who.c.Patch(ctx, &toolgatev1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Namespace: demoNS, Name: call.Name}},
					client.RawPatch(types.MergePatchType, []byte(patch)))
				Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: %s: %v", who.name, patch, err)
				Expect(err.Error()).To(ContainSubstring("'" + admission.RecordPolicyName + "'"))
			}
		}

		got := &toolgatev1alpha1.ToolCall{}
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(call), got)).To(Succeed(), "the call is still there")
		Expect(got.OwnerReferences).To(BeEmpty())
		Expect(got.Finalizers).NotTo(ContainElement("example.com/pin"))
		Expect(got.Status.Phase).To(Equal(toolgatev1alpha1.PhaseRunning))

		By("the agent may still cancel it (and so end the spec's Pod)")
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig("TOOLGATE_KUBECONFIG_AGENT", "kubeconfigs/agent.kubeconfig"))
		Expect(err).NotTo(HaveOccurred())
		c, err := agentclient.New(ctx, cfg, demoNS)
		Expect(err).NotTo(HaveOccurred())
		_, err = c.Cancel(ctx, call.Name)
		Expect(err).NotTo(HaveOccurred())
		expectCancelledOnCluster(ctx, call, "agent")
	}, SpecTimeout(3*time.Minute))

	It("keeps a call that asked for ttlSecondsAfterFinished 0 for the operator's floor", func(ctx SpecContext) {
		call := toolgatetest.MakeToolCall("", demoNS).Tool("echo").TTL(0).
			Args(map[string]any{"message": "gone at once?"}).Label(e2eLabel, "true").Obj()
		call.GenerateName = "e2e-brief-"
		Expect(agent.Create(ctx, call)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })
		done := waitTerminal(ctx, call, callTimeout)
		Expect(done.Status.ExpiresAt).NotTo(BeNil())
		Expect(done.Status.ExpiresAt.Sub(done.Status.CompletionTime.Time)).To(Equal(5*time.Minute),
			"the chart's manager.toolcallMinTTL (5m) raises the agent's 0")
	}, SpecTimeout(2*time.Minute))

	It("keeps a call that asked for ttlSecondsAfterFinished 2147483647 no longer than the operator's ceiling", func(ctx SpecContext) {
		call := toolgatetest.MakeToolCall("", demoNS).Tool("echo").TTL(2147483647).
			Args(map[string]any{"message": "kept until 2094?"}).Label(e2eLabel, "true").Obj()
		call.GenerateName = "e2e-forever-"
		Expect(agent.Create(ctx, call)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })
		done := waitTerminal(ctx, call, callTimeout)
		Expect(done.Status.ExpiresAt).NotTo(BeNil())
		Expect(done.Status.ExpiresAt.Sub(done.Status.CompletionTime.Time)).To(Equal(7*24*time.Hour),
			"the chart's manager.toolcallMaxTTL (168h) lowers the agent's 68 years")
	}, SpecTimeout(2*time.Minute))

	It("lets the garbage collector finish a foreground delete of a finished call", func(ctx SpecContext) {
		call := createCall(ctx, "echo", "", map[string]any{"message": "delete me in the foreground"})
		waitTerminal(ctx, call, callTimeout)
		Expect(admin.Delete(ctx, call, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		// The collector deletes the call's Job (and its Pod), then removes foregroundDeletion
		// from the call: a policy that refused it that write would leave the call deleting.
		Eventually(func() error {
			return admin.Get(ctx, client.ObjectKeyFromObject(call), &toolgatev1alpha1.ToolCall{})
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound))
		Expect(jobsOf(ctx, call)).To(BeEmpty())
	}, SpecTimeout(3*time.Minute))
})
