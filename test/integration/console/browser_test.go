package console_test

import (
	"bytes"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/internal/browser"
)

// screenshotDir is where the browser specs save their screenshots: $CONSOLE_SCREENSHOTS
// (e.g. docs/images), else a temporary directory.
func screenshotDir() string {
	if d := os.Getenv("CONSOLE_SCREENSHOTS"); d != "" {
		return d
	}
	return GinkgoT().TempDir()
}

var _ = Describe("the approval console in headless Chromium", Label("console", "browser"), func() {
	var ns string

	BeforeEach(func(ctx SpecContext) { ns = approvalNamespace(ctx) })

	It("carol sees the pending call's card, clicks Approve, and sees the call end Succeeded without reloading", func(ctx SpecContext) {
		bctx, stop, err := browser.New(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
		s := startConsole(ctx, "carol", "-n", ns)

		By("the list page is open (and empty) when the call parks: its card arrives live")
		Expect(chromedp.Do(bctx, chromedp.Navigate(s.Login), chromedp.WaitVisible(chromedp.CSS("p.empty")))).To(Succeed())
		Expect(chromedp.Do(bctx, chromedp.Poll[chromedp.Void](`document.body.dataset.live === 'open'`))).To(Succeed())
		_, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`window.__notReloaded = true`))
		Expect(err).NotTo(HaveOccurred())
		parkedCall(ctx, ns, "deploy-web")
		card := `article[data-call="` + ns + `/deploy-web"]`
		Expect(chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(card)))).To(Succeed())
		Expect(chromedp.Run(bctx, chromedp.Evaluate[bool](`window.__notReloaded === true`))).To(BeTrue(), "the card came without a reload")
		Expect(chromedp.Run(bctx, browser.TextOf(card+" h2.present"))).To(Equal("echo deploy"))
		Expect(chromedp.Run(bctx, browser.TextOf(card+" .requester"))).To(Equal("alice"))
		By("the deadline counts down in the page")
		first, err := chromedp.Run(bctx, browser.TextOf(card+" time.countdown"))
		Expect(err).NotTo(HaveOccurred())
		Expect(first).To(MatchRegexp(`^in \d+m\d+s$`))
		Expect(chromedp.Do(bctx, chromedp.Poll[chromedp.Void](
			`document.querySelector('`+card+` time.countdown').textContent !== '`+first+`'`,
			chromedp.WithPollingTimeout(5*time.Second)))).To(Succeed())
		Expect(chromedp.Do(bctx, browser.Fill(card+` input[name=reason]`, "ticket 4711"))).To(Succeed())
		shot, err := browser.Screenshot(bctx, filepath.Join(screenshotDir(), "console-pending.png"))
		Expect(err).NotTo(HaveOccurred())
		expectSmallPNG(shot)

		By("Approve: the call page follows the call to Succeeded, live")
		resp, err := chromedp.RunResponse(bctx, browser.ClickOn(card+" button.approve"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Status).To(BeEquivalentTo(200))
		Expect(chromedp.Run(bctx, browser.TextOf("#flash"))).To(Equal("Approved call " + ns + "/deploy-web as carol."))
		_, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`window.__notReloaded = true`))
		Expect(err).NotTo(HaveOccurred())
		Expect(chromedp.Do(bctx, chromedp.Poll[chromedp.Void](`document.getElementById('phase').textContent === 'Succeeded'`,
			chromedp.WithPollingTimeout(LongTimeout)))).To(Succeed())
		Expect(chromedp.Run(bctx, chromedp.Evaluate[bool](`window.__notReloaded === true`))).To(BeTrue(), "Succeeded came without a reload")
		Expect(chromedp.Run(bctx, chromedp.Evaluate[string](`location.pathname`))).To(Equal("/calls/" + ns + "/deploy-web"))
		Expect(chromedp.Run(bctx, browser.TextOf("#result h3.present"))).To(Equal("echoed deploy"))
		Expect(phaseOf(ctx, ns, "deploy-web")).To(Equal(v1alpha1.PhaseSucceeded))
		shot, err = browser.Screenshot(bctx, filepath.Join(screenshotDir(), "console-call.png"))
		Expect(err).NotTo(HaveOccurred())
		expectSmallPNG(shot)
	})
})

// expectSmallPNG checks a screenshot is a PNG under 200 KB (it goes into the docs).
func expectSmallPNG(b []byte) {
	GinkgoHelper()
	Expect(bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n"))).To(BeTrue(), "a PNG")
	Expect(len(b)).To(BeNumerically("<", 200<<10))
}
