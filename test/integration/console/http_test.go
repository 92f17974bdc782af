package console_test

import (
	"bufio"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// page is one response: status and body.
type page struct {
	Status   int
	Body     string
	Location string
	Header   http.Header
}

func get(ctx SpecContext, c *http.Client, u string) page {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	Expect(err).NotTo(HaveOccurred())
	return do(c, req)
}

func post(ctx SpecContext, c *http.Client, u string, form url.Values, header http.Header) page {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	return do(c, req)
}

func do(c *http.Client, req *http.Request) page {
	GinkgoHelper()
	resp, err := c.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return page{Status: resp.StatusCode, Body: string(body), Location: resp.Header.Get("Location"), Header: resp.Header}
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf is the CSRF token a page carries.
func csrfOf(p page) string {
	GinkgoHelper()
	m := csrfInput.FindStringSubmatch(p.Body)
	Expect(m).To(HaveLen(2), "no CSRF token in the page:\n%s", p.Body)
	return m[1]
}

// signedIn opens the console's sign-in link and returns the client with its session.
func signedIn(ctx SpecContext, s server) *http.Client {
	GinkgoHelper()
	c := browserless()
	p := get(ctx, c, s.Login)
	Expect(p.Status).To(Equal(http.StatusSeeOther))
	Expect(p.Location).To(Equal("/"))
	return c
}

func decisionForm(call *v1alpha1.ToolCall, csrf, decision, reason string) url.Values {
	return url.Values{"csrf": {csrf}, "uid": {string(call.UID)}, "digest": {call.Status.ArgumentsDigest},
		"decision": {decision}, "reason": {reason}}
}

var _ = Describe("the approval console over HTTP", Label("console"), func() {
	var ns string

	BeforeEach(func(ctx SpecContext) { ns = approvalNamespace(ctx) })

	It("shows carol the call awaiting approval as its card, and her Approve writes the approval as carol: the call runs", func(ctx SpecContext) {
		call := parkedCall(ctx, ns, "deploy-1")
		s := startConsole(ctx, "carol")
		c := signedIn(ctx, s)

		p := get(ctx, c, s.Base+"/")
		Expect(p.Status).To(Equal(http.StatusOK))
		By("carol may not list calls across namespaces nor list namespaces: the console shows her kubeconfig's namespace, and says so")
		Expect(p.Body).To(ContainSubstring("showing namespace default"))
		Expect(p.Body).NotTo(ContainSubstring("deploy-1"))

		s = startConsole(ctx, "carol", "-n", ns)
		c = signedIn(ctx, s)
		p = get(ctx, c, s.Base+"/")
		Expect(p.Status).To(Equal(http.StatusOK))
		Expect(p.Body).To(ContainSubstring(`<h2 class="present">echo deploy</h2>`), "the Tool's present_call")
		Expect(p.Body).To(ContainSubstring(`<dd class="requester">alice</dd>`))
		Expect(p.Body).To(ContainSubstring(call.Status.ArgumentsDigest))
		Expect(p.Body).To(ContainSubstring("deploying needs a human"))
		Expect(p.Body).To(MatchRegexp(`data-deadline="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ">in \d+m\d+s</time>`))
		Expect(p.Body).To(ContainSubstring(`<pre class="arguments canonical">{&#34;text&#34;:&#34;deploy&#34;}</pre>`), "the canonical arguments, escaped")
		Expect(p.Body).To(ContainSubstring(`signed in as <b id="user">carol</b>`))
		Expect(p.Header.Get("Access-Control-Allow-Origin")).To(BeEmpty())
		Expect(p.Header.Get("Content-Security-Policy")).To(ContainSubstring("script-src 'self'"))

		p = post(ctx, c, s.Base+"/calls/"+ns+"/deploy-1/decision", decisionForm(call, csrfOf(p), "Approve", "ticket 4711"), nil)
		Expect(p.Status).To(Equal(http.StatusOK), p.Body)
		Expect(p.Body).To(ContainSubstring("Approved call " + ns + "/deploy-1 as carol."))
		approval := &v1alpha1.ToolCallApproval{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(call), approval)).To(Succeed())
		Expect(approval.Spec).To(Equal(v1alpha1.ToolCallApprovalSpec{CallUID: string(call.UID), Decision: v1alpha1.DecisionApprove,
			ArgumentsDigest: call.Status.ArgumentsDigest, Approver: "carol", Reason: "ticket 4711"}))
		Eventually(func() v1alpha1.ToolCallPhase { return phaseOf(ctx, ns, "deploy-1") }).WithContext(ctx).WithTimeout(LongTimeout).Should(Equal(v1alpha1.PhaseSucceeded))

		By("the call page: the stages as a timeline, the result card with the Tool's present_result, attempts, Pods and the approval")
		p = get(ctx, c, s.Base+"/calls/"+ns+"/deploy-1")
		Expect(p.Status).To(Equal(http.StatusOK))
		Expect(p.Body).To(ContainSubstring(`id="phase">Succeeded</span>`))
		for _, cond := range []string{"Created", "ArgumentsFrozen", "Admitted", "Executed", "Completed"} {
			Expect(p.Body).To(ContainSubstring(`<span class="cond">`+cond+`</span>`), cond)
		}
		Expect(p.Body).To(ContainSubstring(`<h3 class="present">echoed deploy</h3>`))
		Expect(p.Body).To(ContainSubstring("<td>deploy-1-1</td>"), "the attempt's Job")
		Expect(p.Body).To(ContainSubstring("Approve by carol"))
		Expect(p.Body).To(ContainSubstring("ticket 4711"))

		By("a second answer is the CLI's message: an answer cannot be changed")
		p = post(ctx, c, s.Base+"/calls/"+ns+"/deploy-1/decision", decisionForm(call, csrfOf(p), "Deny", ""), nil)
		Expect(p.Status).To(Equal(http.StatusConflict))
		Expect(p.Body).To(ContainSubstring("is not awaiting approval (phase Succeeded): there is nothing to deny"))
	})

	It("refuses alice's approval of her own call with a clear message, and writes nothing", func(ctx SpecContext) {
		call := parkedCall(ctx, ns, "mine")
		s := startConsole(ctx, "alice", "-n", ns)
		c := signedIn(ctx, s)
		p := get(ctx, c, s.Base+"/")
		Expect(p.Body).To(ContainSubstring(`value="Approve" disabled`))
		Expect(p.Body).To(ContainSubstring("You requested this call: someone else must approve it"))

		p = post(ctx, c, s.Base+"/calls/"+ns+"/mine/decision", decisionForm(call, csrfOf(p), "Approve", ""), nil)
		Expect(p.Status).To(Equal(http.StatusForbidden))
		Expect(p.Body).To(ContainSubstring("you (alice) requested call mine: someone else must approve it (toolgate refuses a self-approval)"))
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(call), &v1alpha1.ToolCallApproval{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
		Expect(phaseOf(ctx, ns, "mine")).To(Equal(v1alpha1.PhaseAwaitingApproval))
	})

	It("denies with a reason: the call ends Denied", func(ctx SpecContext) {
		call := parkedCall(ctx, ns, "nope")
		s := startConsole(ctx, "carol", "-n", ns)
		c := signedIn(ctx, s)
		p := get(ctx, c, s.Base+"/calls/"+ns+"/nope")
		Expect(p.Status).To(Equal(http.StatusOK))
		p = post(ctx, c, s.Base+"/calls/"+ns+"/nope/decision", decisionForm(call, csrfOf(p), "Deny", "not on a Friday"), nil)
		Expect(p.Status).To(Equal(http.StatusOK), p.Body)
		Expect(p.Body).To(ContainSubstring("Denied call " + ns + "/nope as carol."))
		Eventually(func() v1alpha1.ToolCallPhase { return phaseOf(ctx, ns, "nope") }).WithContext(ctx).Should(Equal(v1alpha1.PhaseDenied))
	})

	It("answers only the call shown: another uid or digest is refused", func(ctx SpecContext) {
		call := parkedCall(ctx, ns, "shown")
		s := startConsole(ctx, "carol", "-n", ns)
		c := signedIn(ctx, s)
		csrf := csrfOf(get(ctx, c, s.Base+"/"))
		form := decisionForm(call, csrf, "Approve", "")
		form.Set("uid", "an-earlier-call")
		p := post(ctx, c, s.Base+"/calls/"+ns+"/shown/decision", form, nil)
		Expect(p.Status).To(Equal(http.StatusConflict))
		Expect(p.Body).To(ContainSubstring("the call is not the one you were shown"))
		form = decisionForm(call, csrf, "Approve", "")
		form.Set("digest", "sha256:0000")
		Expect(post(ctx, c, s.Base+"/calls/"+ns+"/shown/decision", form, nil).Status).To(Equal(http.StatusConflict))
		Expect(phaseOf(ctx, ns, "shown")).To(Equal(v1alpha1.PhaseAwaitingApproval))
	})

	It("refuses requests without the session, without the CSRF token, or from another origin", func(ctx SpecContext) {
		call := parkedCall(ctx, ns, "guarded")
		s := startConsole(ctx, "carol", "-n", ns)
		stranger := browserless()
		p := get(ctx, stranger, s.Base+"/")
		Expect(p.Status).To(Equal(http.StatusSeeOther))
		Expect(p.Location).To(Equal("/login"))
		Expect(get(ctx, stranger, s.Base+"/login?secret=guess").Body).To(ContainSubstring("Open the sign-in link"))
		Expect(get(ctx, stranger, s.Base+"/events").Status).To(Equal(http.StatusUnauthorized))
		Expect(post(ctx, stranger, s.Base+"/calls/"+ns+"/guarded/decision", decisionForm(call, "x", "Approve", ""), nil).Status).
			To(Equal(http.StatusUnauthorized))

		c := signedIn(ctx, s)
		csrf := csrfOf(get(ctx, c, s.Base+"/"))
		By("no CSRF token, or another session's")
		Expect(post(ctx, c, s.Base+"/calls/"+ns+"/guarded/decision", decisionForm(call, "", "Approve", ""), nil).Status).
			To(Equal(http.StatusForbidden))
		Expect(post(ctx, c, s.Base+"/calls/"+ns+"/guarded/decision", decisionForm(call, csrf+"x", "Approve", ""), nil).Status).
			To(Equal(http.StatusForbidden))
		By("a cross-origin form post carrying the session cookie and even the right token")
		for _, h := range []http.Header{
			{"Sec-Fetch-Site": {"cross-site"}},
			{"Origin": {"http://evil.example"}},
		} {
			p := post(ctx, c, s.Base+"/calls/"+ns+"/guarded/decision", decisionForm(call, csrf, "Approve", ""), h)
			Expect(p.Status).To(Equal(http.StatusForbidden), "%v", h)
		}
		Expect(phaseOf(ctx, ns, "guarded")).To(Equal(v1alpha1.PhaseAwaitingApproval))
	})

	It("streams a change event when a watched call changes", func(ctx SpecContext) {
		call := parkedCall(ctx, ns, "streamed")
		s := startConsole(ctx, "carol", "-n", ns)
		c := signedIn(ctx, s)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Base+"/events?namespace="+ns+"&call=streamed", nil)
		Expect(err).NotTo(HaveOccurred())
		resp, err := c.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(resp.Header.Get("Content-Type")).To(Equal("text/event-stream"))
		lines := make(chan string, 100)
		go func() {
			defer GinkgoRecover()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		Eventually(lines).Should(Receive(Equal(": watching")))
		// The watch begins with the call as it is, then reports the approval's effects.
		Eventually(lines).Should(Receive(Equal(`data: {"namespace":"` + ns + `","name":"streamed","phase":"AwaitingApproval"}`)))
		approval := MakeToolCallApproval("streamed", ns).For(call).Approver(AdminUser).Decision(v1alpha1.DecisionApprove).Obj()
		Expect(k8sClient.Create(ctx, approval)).To(Succeed())
		Eventually(lines).WithTimeout(LongTimeout).Should(Receive(Equal(`data: {"namespace":"` + ns + `","name":"streamed","phase":"Succeeded"}`)))
	})
})

// approvalNamespace is a new namespace with the asking echo tool, where carol is an
// approver.
func approvalNamespace(ctx SpecContext) string {
	GinkgoHelper()
	ns := newNamespace(ctx)
	create(ctx, askingEcho(ns)...)
	_, err := env.BindUserRole(ctx, ns, ApproverRole, "carol")
	Expect(err).NotTo(HaveOccurred())
	return ns
}
