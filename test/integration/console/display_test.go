package console_test

import (
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// The console shows what an agent wrote (arguments, and through the Tool's presentation
// and the echo body, the result) with bidi controls and zero-width characters visible, and
// the card shows the canonical arguments and their digest before anything the agent chose.
var _ = Describe("the approval console shows what callers and tools wrote escaped", Label("console", "display"), func() {
	// bidi reads "deploy; hs.exe" on screen for the bytes "deploy; exe.sh".
	const bidi = "deploy; \u202eexe.sh\u202c\u200b"
	const shown = `deploy; <span class="esc">\u202e</span>exe.sh<span class="esc">\u202c</span><span class="esc">\u200b</span>`
	var ns string

	BeforeEach(func(ctx SpecContext) {
		ns = approvalNamespace(ctx)
		create(ctx, MakeToolPolicy("ask-bidi", ns).Stage(v1alpha1.StagePreExecute).
			Rule(v1alpha1.PolicyRule{Name: "deploys", Expression: `arguments.text.startsWith("deploy;")`, Verdict: v1alpha1.VerdictAsk,
				Message: "deploying needs a human"}).Obj())
	})

	It("the card leads with the canonical arguments and digest; the call page shows the result escaped", func(ctx SpecContext) {
		Expect(clients["alice"].Create(ctx, MakeToolCall("bidi", ns).Tool("echo").Requester("alice").Session("review-42").
			Args(map[string]any{"text": bidi}).Obj())).To(Succeed())
		call := &v1alpha1.ToolCall{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bidi"}, call)).To(Succeed())
			g.Expect(call).To(HavePhase(v1alpha1.PhaseAwaitingApproval))
		}).WithContext(ctx).Should(Succeed())

		s := startConsole(ctx, "carol", "-n", ns)
		c := signedIn(ctx, s)
		p := get(ctx, c, s.Base+"/")
		Expect(p.Status).To(Equal(http.StatusOK))
		expectShown(p.Body)
		canonical := `, digest <code class="digest">` + call.Status.ArgumentsDigest + `</code></p>` + "\n" +
			`    <pre class="arguments canonical">{&#34;text&#34;:&#34;` + shown + `&#34;}</pre>`
		Expect(p.Body).To(ContainSubstring(canonical))
		at := strings.Index(p.Body, canonical)
		for _, agentChose := range []string{`<h2 class="present">echo ` + shown + `</h2>`, "<dt>Tool</dt>", "<dt>Session</dt><dd>review-42</dd>", `<dd class="requester">alice</dd>`} {
			Expect(p.Body).To(ContainSubstring(agentChose))
			Expect(strings.Index(p.Body, agentChose)).To(BeNumerically(">", at), "%s comes after the canonical arguments", agentChose)
		}

		p = post(ctx, c, s.Base+"/calls/"+ns+"/bidi/decision", decisionForm(call, csrfOf(p), "Approve", ""), nil)
		Expect(p.Status).To(Equal(http.StatusOK), p.Body)
		Eventually(func() v1alpha1.ToolCallPhase { return phaseOf(ctx, ns, "bidi") }).WithContext(ctx).Should(Equal(v1alpha1.PhaseSucceeded))
		p = get(ctx, c, s.Base+"/calls/"+ns+"/bidi")
		Expect(p.Status).To(Equal(http.StatusOK))
		expectShown(p.Body)
		Expect(p.Body).To(ContainSubstring(`<h3 class="present">echoed `+shown+`</h3>`), "the Tool's present_result")
		Expect(p.Body).To(ContainSubstring(`&#34;text&#34;: &#34;`+shown+`&#34;`), "the echoed content")
	})
})

// hiddenIn lists the characters of a page a browser would not show as themselves or that
// reorder what follows: controls (but newline), DEL, C1, bidi controls, zero-width
// characters, BOM.
func hiddenIn(out string) []string {
	var found []string
	for i, r := range out {
		switch {
		case r == '\n':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r == 0x061c, r == 0xfeff,
			r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2060 && r <= 0x2069:
			found = append(found, fmt.Sprintf("%U at byte %d: %q", r, i, out[max(i-40, 0):min(i+40, len(out))]))
		}
	}
	return found
}

func expectShown(page string) {
	GinkgoHelper()
	Expect(hiddenIn(page)).To(BeEmpty())
}
