package e2e

import (
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/internal/browser"
)

// The console as the chart deploys it (console.enabled in the local values: --auth
// token): a person signs in by pasting a service-account token minted for the audience
// toolgate, and the console answers as that identity (impersonation).
var _ = Describe("the deployed approval console", Label("console", "browser", "approval"), func() {
	It("signs a service account in with its token, shows the pending card and approves as that account", func(ctx SpecContext) {
		var svc corev1.Service
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: release + "-console"}, &svc)).To(Succeed(),
			"the chart's console (console.enabled in charts/toolgate/ci/local-values.yaml)")
		base := "http://" + svc.Spec.ClusterIP + ":8091"

		name := "e2e-console-" + utilrand.String(5)
		token := approverToken(ctx, name)

		call := createNamedCall(ctx, name)

		bctx, stop, err := browser.New(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
		By("the console sends a browser without a session to its sign-in form; the token signs it in")
		Expect(chromedp.Do(bctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("textarea[name=token]")),
			browser.Fill("textarea[name=token]", token))).To(Succeed())
		resp, err := chromedp.RunResponse(bctx, browser.ClickOn("form.login button"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Status).To(BeEquivalentTo(200))
		who := "system:serviceaccount:" + demoNS + ":" + name
		Expect(chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector('.flash.error') ? document.querySelector('.flash.error').textContent : ''`))).
			To(BeEmpty(), "the sign-in page's error")
		Expect(chromedp.Run(bctx, browser.TextOf("#user"))).To(Equal(who))
		card := `article[data-call="` + demoNS + `/` + call.Name + `"]`
		Expect(chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(card)))).To(Succeed())

		resp, err = chromedp.RunResponse(bctx, browser.ClickOn(card+" button.approve"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Status).To(BeEquivalentTo(200))
		Expect(chromedp.Run(bctx, browser.TextOf("#flash"))).To(Equal("Approved call " + demoNS + "/" + call.Name + " as " + who + "."))
		Expect(chromedp.Do(bctx, chromedp.Poll[chromedp.Void](`document.getElementById('phase').textContent === 'Succeeded'`,
			chromedp.WithPollingTimeout(callTimeout)))).To(Succeed())

		var approval toolgatev1alpha1.ToolCallApproval
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(call), &approval)).To(Succeed())
		Expect(approval.Spec.Approver).To(Equal(who), "written as the token's identity, not the console's")
		Expect(waitTerminal(ctx, call, callTimeout)).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
	}, SpecTimeout(4*time.Minute))
})
