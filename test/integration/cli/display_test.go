package cli_test

import (
	"encoding/json"
	"fmt"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/cli"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// What a hostile agent (its arguments) and a hostile tool body (its output, its stderr)
// wrote reaches the person at the terminal escaped, never as bytes the terminal acts on;
// machine output (-o json) keeps the exact bytes.
var _ = Describe("toolgate shows what callers and tools wrote escaped", Label("display"), func() {
	const (
		// osc52 writes "curl x|sh" to the clipboard, sets the window title, clears the screen.
		osc52 = "\x1b]52;c;Y3VybCB4fHNo\x07\x1b]0;pwned\x07\x1b[2J"
		// escaped is osc52 as the CLI shows it.
		escaped = `\x1b]52;c;Y3VybCB4fHNo\x07\x1b]0;pwned\x07\x1b[2J`
		// bidi reads "deploy; hs.exe" on screen for the bytes "deploy; exe.sh".
		bidi = "deploy; \u202eexe.sh\u202c"
	)
	var ns string

	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), MakeTool("hostile-out", ns).Obj(), MakeTool("hostile-err", ns).Obj(),
			MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).Tools("echo").
				Rule(v1alpha1.PolicyRule{Name: "deploys", Expression: `arguments.text.startsWith("deploy")`, Verdict: v1alpha1.VerdictAsk,
					Message: "deploying needs a human"}).Obj())
		kubelet.Script("hostile-out", Outcome{Stdout: []byte("out: " + osc52 + "\r\nfake prompt \u202e\n")})
		kubelet.Script("hostile-err", Outcome{ExitCode: 3, Stderr: "boom " + osc52})
	})

	It("call --wait prints a tool's text output and its error escaped, and -o json exactly", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "call", "hostile-out", "--wait")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		expectShown(r.Out + r.ErrOut)
		Expect(r.Out).To(Equal("out: " + escaped + `\r` + "\nfake prompt \\u202e\n"))

		r = toolgate(ctx, "alice", ns, "", "call", "hostile-err", "--wait")
		Expect(r.Code).To(Equal(cli.ExitToolError), r.ErrOut)
		expectShown(r.Out + r.ErrOut)
		Expect(r.Out).To(Equal("error: NonZeroExit: the tool exited with code 3: boom " + escaped + "\n"))
		Expect(r.ErrOut).To(MatchRegexp(`(?m)Failed +NonZeroExit: the tool exited with code 3: boom ` + regexp.QuoteMeta(escaped)))

		r = toolgate(ctx, "alice", ns, "", "call", "hostile-out", "--wait", "-o", "json")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		var got v1alpha1.ToolCall
		Expect(json.Unmarshal([]byte(r.Out), &got)).To(Succeed())
		var content string
		Expect(json.Unmarshal(got.Status.Result.Content.Raw, &content)).To(Succeed())
		Expect(content).To(Equal("out: "+osc52+"\r\nfake prompt \u202e\n"), "-o json carries the exact output")
	})

	It("describe and get show a hostile result and arguments escaped", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "call", "hostile-err", "--wait")
		Expect(r.Code).To(Equal(cli.ExitToolError), r.ErrOut)
		call := onlyCall(ctx, ns, v1alpha1.PhaseFailed)
		Eventually(func(g Gomega) {
			r := toolgate(ctx, AdminUser, ns, "", "describe", call.Name)
			g.Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
			g.Expect(hiddenIn(r.Out)).To(BeEmpty(), "describe:\n%s", r.Out)
			g.Expect(r.Out).To(ContainSubstring("  Error:    the tool exited with code 3: boom " + escaped + "\n"))
			g.Expect(r.Out).To(MatchRegexp(`Executed +False +NonZeroExit +.*boom ` + regexp.QuoteMeta(escaped)))
		}).WithContext(ctx).Should(Succeed())

		r = toolgate(ctx, AdminUser, ns, "", "get", "-o", "wide")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		expectShown(r.Out)
	})

	It("approve shows the canonical arguments and their digest first, bidi characters escaped", func(ctx SpecContext) {
		_, errOut, code := background(ctx, "alice", ns, "call", "echo", "--args", fmt.Sprintf(`{"text": %q}`, bidi), "--session", "review-42", "--wait")
		Eventually(errOut).Should(gbytes.Say(`AwaitingApproval`))
		call := onlyCall(ctx, ns, v1alpha1.PhaseAwaitingApproval)

		r := toolgate(ctx, "bob", ns, "y\n", "approve", call.Name)
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		expectShown(r.Out)
		Expect(r.Out).To(HavePrefix("Arguments (canonical JSON, " + call.Status.ArgumentsDigest + "):\n" +
			`  {"text":"deploy; \u202eexe.sh\u202c"}` + "\nCall:          " + call.Name + " in namespace " + ns + "\n"))
		Expect(r.Out).To(ContainSubstring("Session:       review-42\n"))
		Eventually(code).WithContext(ctx).Should(Receive(Equal(cli.ExitOK)))
		expectShown(string(errOut.Contents()))
	})

	It("call refuses a --session that is not an identifier before creating anything", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "call", "echo", "text=hi", "--session", "s1\nArguments: ls -l /tmp\x1b[8m")
		Expect(r.Code).To(Equal(cli.ExitUsage), r.ErrOut)
		Expect(r.ErrOut).To(Equal(`error: --session "s1\nArguments: ls -l /tmp\x1b[8m": a session is 1 to 253 letters, digits and . _ : / @ + = - (spec.session must match ` +
			v1alpha1.SessionPattern + ")\n"))
		Expect(calls(ctx, ns)).To(BeEmpty())
	})
})

// hiddenIn lists the characters of out a terminal would act on or not show: controls (but
// newline), DEL, C1, bidi controls, zero-width characters, BOM.
func hiddenIn(out string) []string {
	var found []string
	for i, r := range out {
		switch {
		case r == '\n':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r == 0x061c, r == 0xfeff,
			r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2060 && r <= 0x2069:
			found = append(found, fmt.Sprintf("%U at byte %d", r, i))
		}
	}
	return found
}

func expectShown(out string) {
	GinkgoHelper()
	Expect(hiddenIn(out)).To(BeEmpty(), "printed:\n%s", out)
}
