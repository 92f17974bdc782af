package cli_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/cli"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("toolgate get, describe and logs", Label("inspect"), func() {
	var ns string
	var call *v1alpha1.ToolCall

	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		r := toolgate(ctx, "alice", ns, "", "call", "echo", "text=hi", "--session", "s1", "--wait")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		call = onlyCall(ctx, ns, v1alpha1.PhaseSucceeded)
	})

	It("get prints a table like kubectl's, or the objects as JSON / YAML", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "get")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		Expect(r.Out).To(MatchRegexp(`^NAME +TOOL +PHASE +VERDICT +DURATION +AGE\n` + call.Name + ` +echo +Succeeded +Allow +` + call.Status.Duration + ` +\d+s\n$`))

		r = toolgate(ctx, "alice", ns, "", "get", call.Name, "-o", "wide")
		Expect(r.Out).To(MatchRegexp(`REQUESTER +SESSION\n` + call.Name + ` .* alice +s1\n$`))

		r = toolgate(ctx, "alice", ns, "", "get", call.Name, "-o", "yaml")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		Expect(r.Out).To(HavePrefix("apiVersion: toolgate.dev/v1alpha1\nkind: ToolCall\n"))
		Expect(r.Out).To(ContainSubstring("  phase: Succeeded\n"))

		r = toolgate(ctx, "alice", ns, "", "get", "-o", "json")
		var list v1alpha1.ToolCallList
		Expect(json.Unmarshal([]byte(r.Out), &list)).To(Succeed())
		Expect(list.Items).To(HaveExactElements(HaveField("Name", call.Name)))
	})

	It("get exits 6 for a call that does not exist", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "get", "nope")
		Expect(r.Code).To(Equal(cli.ExitFailure))
		Expect(r.ErrOut).To(Equal(`error: toolcalls.toolgate.dev nope not found in namespace "` + ns + `"` + "\n"))
	})

	It("describe shows the timeline of conditions, the tool, arguments, result, Job, Pod and events", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			r := toolgate(ctx, AdminUser, ns, "", "describe", call.Name)
			g.Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
			g.Expect(r.Out).To(ContainSubstring("Name:      " + call.Name + "\n"))
			g.Expect(r.Out).To(ContainSubstring("Requester: alice\n"))
			g.Expect(r.Out).To(ContainSubstring("Session:   s1\n"))
			g.Expect(r.Out).To(MatchRegexp(`Timeline:\n +AT +DELTA +CONDITION +STATUS +REASON +MESSAGE\n +\+0s +Created\n`))
			for _, c := range []string{"Resolved", "ArgumentsFrozen", "ArgumentsValid", "Admitted", "Guarded", "Executed", "ResultAccepted", "Normalized", "Completed"} {
				g.Expect(r.Out).To(MatchRegexp(`(?m)^  \+\d+s +\+\d+s +`+c+` +True `), c)
			}
			g.Expect(r.Out).To(ContainSubstring("Arguments (" + call.Status.ArgumentsDigest + "):\n  {\n    \"text\": \"hi\"\n  }\n"))
			g.Expect(r.Out).To(ContainSubstring("Result (" + call.Status.ResultDigest + "):\n  OK:       true\n"))
			g.Expect(r.Out).To(MatchRegexp(`Job:\n  Name: +` + call.Status.Job.Name + `\n  State: +Complete\n`))
			g.Expect(r.Out).To(MatchRegexp(`Pods:\n.*\n  ` + call.Status.Job.Name + `-sim +1 +Succeeded +Terminated: .*\(exit 0\)\n`))
			g.Expect(r.Out).To(MatchRegexp(`Events:\n(?s:.*)Normal +CallAdmitted +.*call of echo by alice admitted`))
			g.Expect(r.Out).To(MatchRegexp(`Normal +ResultFrozen +.*call of echo ended Succeeded`))
			g.Expect(r.Out).NotTo(ContainSubstring("Notes:"))
		}).WithContext(ctx).Should(Succeed())
	})

	It("describe notes what the caller may not read instead of failing", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "describe", call.Name)
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		Expect(r.Out).To(ContainSubstring("Completed"))
		Expect(r.Out).To(ContainSubstring(`Notes:
  you may not get jobs.batch ` + call.Status.Job.Name + ` in namespace "` + ns + `" (as alice)
  you may not list pods in namespace "` + ns + `" (as alice)
  you may not list events in namespace "` + ns + `" (as alice)
`))
	})

	It("logs finds the attempt's Pod, and says why a call without one has no logs", func(ctx SpecContext) {
		// envtest has no kubelet to serve pods/log: the request reaches the Pod and fails there.
		r := toolgate(ctx, AdminUser, ns, "", "logs", call.Name)
		Expect(r.Code).NotTo(Equal(cli.ExitOK))
		Expect(r.ErrOut).To(HavePrefix("error: reading the log of Pod " + call.Status.Job.Name + "-sim: "))

		r = toolgate(ctx, AdminUser, ns, "", "logs", call.Name, "--attempt", "2")
		Expect(r.Code).To(Equal(cli.ExitUsage))
		Expect(r.ErrOut).To(Equal("error: call " + call.Name + " has 1 attempt(s): --attempt must be between 1 and 1\n"))

		create(ctx, MakeToolPolicy("deny-all", ns).Stage(v1alpha1.StagePreExecute).VerdictRule("all", "true", v1alpha1.VerdictDeny).Obj())
		Eventually(func(g Gomega) {
			r = toolgate(ctx, "alice", ns, "", "call", "echo", "text=no", "--wait")
			g.Expect(r.Code).To(Equal(cli.ExitDenied), r.ErrOut)
		}).WithContext(ctx).Should(Succeed())
		var denied string
		for _, c := range calls(ctx, ns) {
			if c.Status.Phase == v1alpha1.PhaseDenied {
				denied = c.Name
			}
		}
		r = toolgate(ctx, AdminUser, ns, "", "logs", denied)
		Expect(r.Code).To(Equal(cli.ExitFailure))
		Expect(r.ErrOut).To(Equal("error: call " + denied + " has not run (phase Denied): it has no Pod and no logs\n"))
	})
})
