package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/internal/browser"
)

var consoleSignIn = regexp.MustCompile(`^Sign in: (\S+)$`)

// The approval console (toolgate console, as the approver user with its kubeconfig) in
// headless Chromium: the agent's call parks for approval, the approver sees its card,
// clicks Approve, and the page follows the call through a real Pod to Succeeded.
var _ = Describe("the approval console in a browser", Label("console", "browser", "approval"), func() {
	It("the approver sees the pending call's card, clicks Approve, and sees the call end Succeeded", func(ctx SpecContext) {
		bin := filepath.Join(GinkgoT().TempDir(), "toolgate")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/toolgate")
		build.Dir = root
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build ./cmd/toolgate: %s", out)

		console := exec.CommandContext(ctx, bin, "console", "--kubeconfig",
			kubeconfig("TOOLGATE_KUBECONFIG_APPROVER", "kubeconfigs/approver.kubeconfig"), "-n", demoNS, "--port", "0")
		console.Stderr = GinkgoWriter
		stdout, err := console.StdoutPipe()
		Expect(err).NotTo(HaveOccurred())
		Expect(console.Start()).To(Succeed())
		DeferCleanup(func() {
			_ = console.Process.Kill()
			_ = console.Wait()
		})
		login := make(chan string, 1)
		go func() {
			defer GinkgoRecover()
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				GinkgoWriter.Println("console:", sc.Text())
				if m := consoleSignIn.FindStringSubmatch(sc.Text()); m != nil {
					login <- m[1]
				}
			}
		}()
		var signIn string
		Eventually(login).WithContext(ctx).WithTimeout(30 * time.Second).Should(Receive(&signIn))

		call := createNamedCall(ctx, "e2e-console-"+utilrand.String(5))

		bctx, stop, err := browser.New(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
		card := `article[data-call="` + demoNS + `/` + call.Name + `"]`
		Expect(chromedp.Do(bctx, chromedp.Navigate(signIn), chromedp.WaitVisible(chromedp.CSS(card)))).To(Succeed())
		Expect(chromedp.Run(bctx, browser.TextOf(card+" h2.present"))).To(Equal("$ " + replayArgs["command"].(string)))
		Expect(chromedp.Run(bctx, browser.TextOf(card+" .requester"))).To(Equal("agent"))
		Expect(chromedp.Run(bctx, browser.TextOf(card+" .digest"))).To(Equal(call.Status.ArgumentsDigest))
		Expect(chromedp.Run(bctx, browser.TextOf(card+" time.countdown"))).To(MatchRegexp(`^in \d+m\d+s$`))
		Expect(chromedp.Do(bctx, browser.Fill(card+" input[name=reason]", "e2e: approved in the browser"))).To(Succeed())
		saveScreenshot(bctx, "console-pending.png")

		By("Approve: the call page follows the call to Succeeded without a reload")
		resp, err := chromedp.RunResponse(bctx, browser.ClickOn(card+" button.approve"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Status).To(BeEquivalentTo(200))
		Expect(chromedp.Run(bctx, browser.TextOf("#flash"))).To(Equal("Approved call " + demoNS + "/" + call.Name + " as approver."))
		_, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`window.__notReloaded = true`))
		Expect(err).NotTo(HaveOccurred())
		Expect(chromedp.Do(bctx, chromedp.Poll[chromedp.Void](`document.getElementById('phase').textContent === 'Succeeded'`,
			chromedp.WithPollingTimeout(callTimeout)))).To(Succeed())
		Expect(chromedp.Run(bctx, chromedp.Evaluate[bool](`window.__notReloaded === true`))).To(BeTrue())
		Expect(chromedp.Run(bctx, browser.TextOf("ol.timeline"))).To(ContainSubstring("Completed"))
		Expect(chromedp.Run(bctx, browser.TextOf("#result"))).To(ContainSubstring("approved once, not twice"))
		saveScreenshot(bctx, "console-call.png")

		done := waitTerminal(ctx, call, callTimeout)
		Expect(done).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
	}, SpecTimeout(5*time.Minute))
})

// saveScreenshot saves the browser's page under $CONSOLE_SCREENSHOTS (e.g. docs/images),
// else in a temporary directory; a PNG under 200 KB, for the docs.
func saveScreenshot(bctx context.Context, name string) {
	GinkgoHelper()
	dir := os.Getenv("CONSOLE_SCREENSHOTS")
	if dir == "" {
		dir = GinkgoT().TempDir()
	}
	png, err := browser.Screenshot(bctx, filepath.Join(dir, name))
	Expect(err).NotTo(HaveOccurred())
	Expect(bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n"))).To(BeTrue())
	Expect(len(png)).To(BeNumerically("<", 200<<10))
}
