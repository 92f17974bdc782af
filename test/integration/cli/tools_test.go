package cli_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/internal/cli"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("toolgate tools", Label("tools"), func() {
	var ns string

	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), MakeTool("grep", ns).Obj(), MakeTool("secret", ns).Obj(),
			MakeTool("team-only", ns).Scope("narrow").Description("Only in narrow.").Obj(),
			MakeToolScope("narrow", ns).Allow("echo", "grep", "team-only").Deny("grep").Obj())
	})

	It("lists what the namespace layer sees, as a table", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			r := toolgate(ctx, "alice", ns, "", "tools")
			g.Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
			g.Expect(r.Out).To(MatchRegexp(`^NAME +KIND +SCOPE +CONCURRENCY-SAFE +READ-ONLY +DESCRIPTION\n`))
			g.Expect(r.Out).To(MatchRegexp(`(?m)^echo +Tool +<namespace> +true +true +Returns its arguments\.$`))
			g.Expect(r.Out).To(MatchRegexp(`(?m)^grep +Tool +<namespace> +false +false`))
			g.Expect(r.Out).To(MatchRegexp(`(?m)^secret +Tool`))
			g.Expect(r.Out).NotTo(ContainSubstring("team-only"))
		}).WithContext(ctx).Should(Succeed())
	})

	It("respects a scope's allow and deny lists, for tools and for call", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			r := toolgate(ctx, "alice", ns, "", "tools", "--scope", "narrow", "-o", "json")
			g.Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
			var cat struct {
				Scope string `json:"scope"`
				Tools []struct {
					Name, Scope string
				} `json:"tools"`
			}
			g.Expect(json.Unmarshal([]byte(r.Out), &cat)).To(Succeed())
			g.Expect(cat.Scope).To(Equal("narrow"))
			g.Expect(cat.Tools).To(HaveExactElements(
				HaveField("Name", "echo"), And(HaveField("Name", "team-only"), HaveField("Scope", "narrow"))))
		}).WithContext(ctx).Should(Succeed())

		r := toolgate(ctx, "alice", ns, "", "call", "grep", "--scope", "narrow", "--wait")
		Expect(r.Code).To(Equal(cli.ExitUsage))
		Expect(r.ErrOut).To(Equal(`error: unknown tool "grep" in scope "narrow" of namespace "` + ns + `"; visible tools: echo, team-only` + "\n"))
		Expect(calls(ctx, ns)).To(BeEmpty())
	})

	It("exits 3 for a scope that does not exist", func(ctx SpecContext) {
		r := toolgate(ctx, "alice", ns, "", "tools", "--scope", "wide")
		Expect(r.Code).To(Equal(cli.ExitUsage))
		Expect(r.ErrOut).To(HavePrefix(`error: scope "wide" in namespace "` + ns + `": `))
	})

	It("notes that ClusterTools are hidden from an agent bound in the namespace only", func(ctx SpecContext) {
		bindShippedRole(ctx, ns, AgentRole, "robot")
		r := toolgate(ctx, "robot", ns, "", "tools")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		Expect(r.Out).To(MatchRegexp(`(?m)^echo +Tool`))
		Expect(r.ErrOut).To(ContainSubstring("note: you may not list ClusterTools, so cluster-wide tools are not shown; calls still resolve them"))

		r = toolgate(ctx, "alice", ns, "", "tools")
		Expect(r.ErrOut).NotTo(ContainSubstring("ClusterTools"))
	})
})
