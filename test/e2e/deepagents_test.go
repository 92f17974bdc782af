package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// agentLoopSummary is the JSON line clients/typescript/test/agent-loop.mjs prints.
type agentLoopSummary struct {
	OK      bool   `json:"ok"`
	Session string `json:"session"`
	Steps   []struct {
		Tool   string `json:"tool"`
		OK     bool   `json:"ok"`
		Output string `json:"output"`
	} `json:"steps"`
	// Calls are the sandbox's tools/calls as the gateway answered them (_meta).
	Calls []struct {
		Tool    string `json:"tool"`
		Call    string `json:"call"`
		Phase   string `json:"phase"`
		Reason  string `json:"reason"`
		IsError bool   `json:"isError"`
	} `json:"calls"`
	Failures []string `json:"failures"`
}

// LangChain deepagents on toolgate (issue 33 item 5): the TypeScript package
// clients/typescript (ToolgateSandbox) as the sandbox backend of deepagents' own agent
// loop, driven by a scripted chat model (test/agent-loop.mjs), through an HTTP gateway with
// a workspace per client session (as gateway_sessions_test.go starts it) on a workspace
// scope of the spec's own, as a ServiceAccount. Every step of the agent must be one
// ToolCall, in one session whose Pods all mount one workspace claim; the demo's Guard
// (config/examples/policies.yaml) denies the recursive rm the script tries.
var _ = Describe("LangChain deepagents with toolgate as its sandbox backend", Label("deepagents", "gateway"), func() {
	It("runs deepagents' agent loop with every step a ToolCall in one session's workspace", func(ctx SpecContext) {
		pkg := filepath.Join(root, "clients", "typescript")
		_, err := os.Stat(filepath.Join(pkg, "dist", "index.js"))
		Expect(err).NotTo(HaveOccurred(), "clients/typescript is built (make ts-client; make test-e2e runs it)")

		const sa = "e2e-deepagents"
		scope := workspaceScopeRetained(ctx, wsRetentionKept)
		user := scopeServiceAccount(ctx, scope, sa)
		token := mintToken(ctx, sa, "toolgate")
		url := startSessionGateway(ctx, scope)

		By("node test/agent-loop.mjs against " + url)
		cmd := exec.CommandContext(ctx, "node", filepath.Join(pkg, "test", "agent-loop.mjs"))
		cmd.Dir = pkg
		cmd.Env = append(os.Environ(), "TOOLGATE_URL="+url, "TOOLGATE_TOKEN="+token, "TOOLGATE_ROOT="+podcontract.WorkspaceMountPath)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		AddReportEntry("agent-loop.mjs", stdout.String()+stderr.String())
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		var summary agentLoopSummary
		Expect(json.Unmarshal([]byte(lines[len(lines)-1]), &summary)).To(Succeed(),
			"the summary line; exit %v, stdout %s, stderr %s", runErr, stdout.String(), stderr.String())
		for _, c := range summary.Calls {
			if c.Call != "" {
				call := &toolgatev1alpha1.ToolCall{}
				call.Name, call.Namespace = c.Call, demoNS
				DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })
			}
		}
		Expect(runErr).NotTo(HaveOccurred(), "failures %v; stderr %s", summary.Failures, stderr.String())
		Expect(summary.OK).To(BeTrue(), "failures %v", summary.Failures)

		By("every step was one ToolCall of the ServiceAccount, in one session")
		want := []struct {
			tool  string
			phase toolgatev1alpha1.ToolCallPhase
		}{
			{"write_file", toolgatev1alpha1.PhaseSucceeded},
			{"sh", toolgatev1alpha1.PhaseSucceeded}, // the script as written
			{"read_file", toolgatev1alpha1.PhaseSucceeded},
			{"edit_file", toolgatev1alpha1.PhaseSucceeded},
			{"sh", toolgatev1alpha1.PhaseSucceeded}, // the edited script, into out.txt
			{"grep", toolgatev1alpha1.PhaseSucceeded},
			{"list", toolgatev1alpha1.PhaseSucceeded}, // glob
			{"list", toolgatev1alpha1.PhaseSucceeded}, // ls
			{"sh", toolgatev1alpha1.PhaseFailed},      // cat of a missing file: exit 1
			{"sh", toolgatev1alpha1.PhaseDenied},      // rm -rf: the demo's Guard
			{"read_file", toolgatev1alpha1.PhaseSucceeded},
		}
		Expect(summary.Steps).To(HaveLen(len(want)))
		Expect(summary.Calls).To(HaveLen(len(want)), "one tools/call per step: %+v", summary.Calls)
		var session string
		claims := map[string]bool{}
		names := map[string]bool{}
		for i, w := range want {
			rec := summary.Calls[i]
			Expect(rec.Tool).To(Equal(w.tool), "step %d", i+1)
			Expect(rec.Phase).To(Equal(string(w.phase)), "step %d: the gateway's _meta phase", i+1)
			var call toolgatev1alpha1.ToolCall
			Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: rec.Call}, &call)).To(Succeed(), "step %d", i+1)
			Expect(call.Spec.Tool).To(Equal(w.tool))
			Expect(call.Spec.Scope).To(Equal(scope))
			Expect(call.Spec.Requester).To(Equal(user))
			Expect(&call).To(toolgatetest.HavePhase(w.phase), toolgatetest.Explain(&call))
			if session == "" {
				session = call.Spec.Session
			}
			Expect(call.Spec.Session).To(Equal(session), "step %d in the first step's session", i+1)
			names[call.Name] = true
			if w.phase == toolgatev1alpha1.PhaseDenied {
				Expect(call.Status.Result).NotTo(BeNil())
				Expect(call.Status.Result.Reason).To(Equal(toolgatev1alpha1.ReasonGuardDenied))
				continue // denied before any Pod
			}
			pods := podsOf(ctx, &call)
			Expect(pods).NotTo(BeEmpty(), "step %d ran in a Pod", i+1)
			for _, p := range pods {
				claims[p.Labels[podcontract.LabelWorkspaceClaim]] = true
			}
		}
		Expect(session).To(HavePrefix("mcp-"), "the sandbox's session key, hashed by the gateway")
		Expect(claims).To(HaveLen(1), "every Pod mounted the session's one workspace claim: %v", claims)
		Expect(claims).NotTo(HaveKey(""))

		By("the session holds exactly these calls")
		var all toolgatev1alpha1.ToolCallList
		Expect(admin.List(ctx, &all, client.InNamespace(demoNS))).To(Succeed())
		inSession := map[string]bool{}
		for _, c := range all.Items {
			if c.Spec.Session == session && c.Spec.Requester == user {
				inSession[c.Name] = true
			}
		}
		Expect(inSession).To(Equal(names))

		By("the workspace was shared: the reads saw the writes")
		Expect(summary.Steps[2].Output).To(ContainSubstring(`echo "hello, $1"`), "read_file saw write_file's script")
		Expect(summary.Steps[4].Output).To(ContainSubstring("good morning, toolgate"), "sh ran the script edit_file changed")
		Expect(summary.Steps[10].Output).To(ContainSubstring("good morning, toolgate"), "read_file saw what sh wrote")
	}, SpecTimeout(6*time.Minute))
})
