package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/cli"
	"github.com/toolgate/toolgate/pkg/agentclient"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("toolgate call", Label("call"), func() {
	var ns string

	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(),
			MakeTool("fail", ns).Description("Always fails.").Obj(),
			MakeTool("slow", ns).Obj(),
			MakeToolPolicy("no-rm", ns).Stage(v1alpha1.StagePreExecute).Tools("echo").
				Rule(v1alpha1.PolicyRule{Name: "rm", Expression: `arguments.text.startsWith("rm ")`, Verdict: v1alpha1.VerdictDeny, Message: "no deleting"}).Obj())
		kubelet.Script("fail", Outcome{ExitCode: 3, Stderr: "boom"})
		kubelet.Script("slow", Outcome{Hold: true})
	})

	It("--wait prints the result and exits 0 when the call succeeds", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "call", "echo", "text=hi", "--wait")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		Expect(r.Out).To(MatchJSON(`{"text": "hi"}`))
		// The first line is whatever phase the CLI first sees: the operator may have admitted
		// the call, or even finished it, before the CLI's first read.
		Expect(r.ErrOut).To(MatchRegexp(`^ +\+0\.\ds  (Pending|Running|Succeeded) `))
		Expect(r.ErrOut).To(MatchRegexp(`(?m)^ +\+\d+\.\ds  Succeeded +in \d`))
		call := onlyCall(ctx, ns, v1alpha1.PhaseSucceeded)
		Expect(call.Spec.Requester).To(Equal("alice"))
		Expect(call.Labels).To(HaveKeyWithValue(agentclient.LabelCreatedBy, cli.CreatedBy))
	})

	It("--wait exits 1 with the error when the result isError", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "call", "fail", "--wait")
		Expect(r.Code).To(Equal(cli.ExitToolError), r.ErrOut)
		Expect(r.Out).To(HavePrefix("error: NonZeroExit: "))
		Expect(r.ErrOut).To(ContainSubstring("Failed"))
	})

	It("--wait exits 2 when a policy denies the call", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "call", "echo", "--args", `{"text": "rm -rf /"}`, "--wait")
		Expect(r.Code).To(Equal(cli.ExitDenied), r.ErrOut)
		Expect(r.Out).To(Equal("error: PolicyDenied: no deleting\n"))
		Expect(r.ErrOut).To(MatchRegexp(`(?m)Denied +PolicyDenied: no deleting`))
		onlyCall(ctx, ns, v1alpha1.PhaseDenied)
	})

	It("exits 3 for an unknown tool, listing the visible ones, and creates nothing", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "call", "ehco", "text=hi", "--wait")
		Expect(r.Code).To(Equal(cli.ExitUsage))
		Expect(r.ErrOut).To(Equal(`error: unknown tool "ehco" in namespace "` + ns + `"; visible tools: echo, fail, slow` + "\n"))
		Expect(calls(ctx, ns)).To(BeEmpty())
	})

	It("exits 3 for invalid JSON, with the position, and creates nothing", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "call", "echo", "--args", "{\"text\":\n  hi}")
		Expect(r.Code).To(Equal(cli.ExitUsage))
		Expect(r.ErrOut).To(ContainSubstring("--args: invalid JSON at line 2, column 3 (offset 12): invalid character 'h'"))

		file := filepath.Join(GinkgoT().TempDir(), "args.json")
		Expect(os.WriteFile(file, []byte(`["not", "an", "object"]`), 0o600)).To(Succeed())
		r = toolgate(ctx, "alice", ns, "", "call", "echo", "--args-file", file)
		Expect(r.Code).To(Equal(cli.ExitUsage))
		Expect(r.ErrOut).To(ContainSubstring("the arguments must be a JSON object, not array"))
		Expect(calls(ctx, ns)).To(BeEmpty())
	})

	It("without --wait prints the new call's name; -o json prints the call", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, `{"text": "from stdin"}`, "call", "echo", "--args-file", "-")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		call := onlyCall(ctx, ns, v1alpha1.PhaseSucceeded)
		Expect(r.Out).To(Equal(call.Name + "\n"))
		Expect(call.Spec.Arguments.Raw).To(MatchJSON(`{"text": "from stdin"}`))

		r = toolgate(ctx, "alice", ns, "", "call", "echo", "text=json", "--wait", "-o", "json")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		var got v1alpha1.ToolCall
		Expect(json.Unmarshal([]byte(r.Out), &got)).To(Succeed(), r.Out)
		Expect(got.Kind).To(Equal("ToolCall"))
		Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		Expect(got.Status.Result.Content.Raw).To(MatchJSON(`{"text": "json"}`))
	})

	It("exits 5 when --timeout passes first, and the call goes on", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "call", "slow", "--wait", "--timeout", "1s")
		Expect(r.Code).To(Equal(cli.ExitTimeout), r.ErrOut)
		call := onlyCall(ctx, ns, v1alpha1.PhaseRunning)
		Expect(r.ErrOut).To(ContainSubstring("error: gave up after 1s: call " + call.Name + " is still Running and goes on"))
		Expect(r.ErrOut).To(MatchRegexp(`Running +attempt 1 runs in Job ` + call.Name + `-1`))
	})

	It("exits 4 and says what is missing when RBAC forbids it", func(ctx SpecContext) {
		r := toolgate(ctx, "nobody", ns, "", "call", "echo", "text=hi")
		Expect(r.Code).To(Equal(cli.ExitForbidden))
		Expect(r.ErrOut).To(Equal(`error: you may not list tools.toolgate.dev in namespace "` + ns + `" (as nobody)` + "\n"))
	})

	It("shows the progress live while waiting, one line per stage", func(ctx SpecContext) {
		_, errOut, code := background(ctx, "alice", ns, "call", "slow", "--wait")
		Eventually(errOut).Should(gbytes.Say(`Running +attempt 1 runs in Job slow-`))
		call := onlyCall(ctx, ns, v1alpha1.PhaseRunning)
		Eventually(func() error {
			return kubelet.Finish(ctx, ns, call.Status.Job.Name, Outcome{Stdout: []byte(`"done"`)})
		}).WithContext(ctx).Should(Succeed())
		Eventually(code).WithContext(ctx).WithTimeout(LongTimeout).Should(Receive(Equal(cli.ExitOK)))
		Expect(errOut).To(gbytes.Say(`Succeeded +in `))
	})
})
