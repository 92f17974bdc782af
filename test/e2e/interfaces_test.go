package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/agentclient"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// The interfaces people and agents use, as built binaries against the real cluster: the
// toolgate CLI and its MCP gateway over stdio, as user agent.
var _ = Describe("the toolgate CLI and MCP gateway", Ordered, Label("cli", "mcp"), func() {
	var bin, agentCfg string

	BeforeAll(func(ctx SpecContext) {
		bin = filepath.Join(GinkgoT().TempDir(), "toolgate")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/toolgate")
		build.Dir = root
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build ./cmd/toolgate: %s", out)
		agentCfg = kubeconfig("TOOLGATE_KUBECONFIG_AGENT", "kubeconfigs/agent.kubeconfig")
	}, NodeTimeout(5*time.Minute))

	It("toolgate call echo --wait prints the result and exits 0", func(ctx SpecContext) {
		cmd := exec.CommandContext(ctx, bin, "call", "echo", "--kubeconfig", agentCfg, "-n", demoNS,
			"--scope", demoScope, "--args", `{"message":"hi from the CLI"}`, "--wait", "-o", "json")
		out, err := cmd.Output()
		Expect(err).NotTo(HaveOccurred(), "toolgate call: %s", stderrOf(err))
		var got toolgatev1alpha1.ToolCall
		Expect(json.Unmarshal(out, &got)).To(Succeed(), "output: %s", out)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
		Expect(got.Spec.Requester).To(Equal("agent"))
		Expect(string(got.Status.Result.Content.Raw)).To(MatchJSON(`{"message":"hi from the CLI"}`))
	}, SpecTimeout(2*time.Minute))

	It("one MCP tools/call of echo round-trips through a real Pod", func(ctx SpecContext) {
		gateway := exec.Command(bin, "mcp", "--kubeconfig", agentCfg, "-n", demoNS, "--scope", demoScope)
		gateway.Stderr = GinkgoWriter
		mcpClient := mcp.NewClient(&mcp.Implementation{Name: "toolgate-e2e", Version: "v0"}, nil)
		session, err := mcpClient.Connect(ctx, &mcp.CommandTransport{Command: gateway}, nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(session.Close)

		tools, err := session.ListTools(ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, t := range tools.Tools {
			names = append(names, t.Name)
		}
		Expect(names).To(ContainElements("echo", "sh", "sleep"))

		// A message of this run only, to find the call among earlier ones.
		message := fmt.Sprintf("hi from MCP %d", time.Now().UnixNano())
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo",
			Arguments: map[string]any{"message": message}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), "result: %+v", res.Content)
		structured, err := json.Marshal(res.StructuredContent)
		Expect(err).NotTo(HaveOccurred())
		Expect(structured).To(MatchJSON(fmt.Sprintf(`{"message":%q}`, message)))

		// The gateway created a real ToolCall as user agent, which ran in a real Pod.
		var calls toolgatev1alpha1.ToolCallList
		Expect(admin.List(ctx, &calls, client.InNamespace(demoNS),
			client.MatchingLabels{agentclient.LabelCreatedBy: "toolgate-mcp"})).To(Succeed())
		var mine *toolgatev1alpha1.ToolCall
		for i := range calls.Items {
			c := &calls.Items[i]
			if c.Spec.Tool == "echo" && string(c.Spec.Arguments.Raw) == fmt.Sprintf(`{"message":%q}`, message) {
				mine = c
			}
		}
		Expect(mine).NotTo(BeNil(), "no ToolCall created by the gateway")
		Expect(mine.Spec.Requester).To(Equal("agent"))
		Expect(mine).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
		pods := podsOf(ctx, mine)
		Expect(pods).NotTo(BeEmpty(), "no Pod ran the MCP call")
		Expect(pods[0].Status.ContainerStatuses).NotTo(BeEmpty())
		Expect(pods[0].Status.ContainerStatuses[0].State.Terminated).NotTo(BeNil())
	}, SpecTimeout(2*time.Minute))
})

func stderrOf(err error) string {
	if err == nil {
		return ""
	}
	if ee, ok := err.(*exec.ExitError); ok { //nolint:errorlint // Output returns *exec.ExitError
		return string(ee.Stderr)
	}
	return err.Error()
}
