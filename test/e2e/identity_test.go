package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/agentclient"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("who asked, and cancelling", Label("identity", "cancel"), func() {
	It("stamps the authenticated user over a forged or an empty requester", func(ctx SpecContext) {
		for _, claimed := range []string{"approver", ""} {
			call := toolgatetest.MakeToolCall("", demoNS).Tool("echo").Requester(claimed).
				Args(map[string]any{"message": "who am I"}).Label(e2eLabel, "true").Obj()
			call.GenerateName = "e2e-stamp-"
			Expect(agent.Create(ctx, call)).To(Succeed(), "requester %q", claimed)
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })
			stored := &toolgatev1alpha1.ToolCall{}
			Expect(admin.Get(ctx, client.ObjectKeyFromObject(call), stored)).To(Succeed())
			Expect(stored.Spec.Requester).To(Equal("agent"), "claimed %q", claimed)
			Expect(stored.Spec.RequesterGroups).To(ContainElement("system:authenticated"))
		}
	})

	It("cancels a running sleep on a real Pod: the Pod goes, the call stays Failed/Cancelled", func(ctx SpecContext) {
		createTool(ctx, longSleepTool())
		call := createCall(ctx, longSleep, "", map[string]any{"seconds": 600})
		Eventually(func(g Gomega) {
			got := &toolgatev1alpha1.ToolCall{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(call), got)).To(Succeed())
			g.Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseRunning))
			g.Expect(runningPod(ctx, g, got)).To(BeTrue(), "the body runs in a real Pod")
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())

		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig("TOOLGATE_KUBECONFIG_AGENT", "kubeconfigs/agent.kubeconfig"))
		Expect(err).NotTo(HaveOccurred())
		c, err := agentclient.New(ctx, cfg, demoNS)
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		_, err = c.Cancel(ctx, call.Name)
		Expect(err).NotTo(HaveOccurred(), "the requester cancels its own call (toolgate cancel does the same)")
		expectCancelledOnCluster(ctx, call, "agent")
		AddReportEntry("cancel to Pod gone", time.Since(start).String())
	}, SpecTimeout(3*time.Minute))
})
