package gateway_test

import (
	"encoding/json"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/gateway"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// shStdout is the stdout of a failing test run, in colour.
const shStdout = "=== RUN TestX\n\x1b[31m--- FAIL: TestX\x1b[0m\n"

// shFailure is what the sh tool prints when its command exits 1 (an isError object).
var shFailure = map[string]any{
	"isError": true, "error": "the command exited with code 1: --- FAIL: TestX", "exitCode": 1,
	"stdout": shStdout, "stderr": "--- FAIL: TestX",
}

// shTool is a tool named name whose simulated body fails as the sh tool does.
func shTool(name, ns string) *ToolWrapper {
	out, err := json.Marshal(shFailure)
	Expect(err).NotTo(HaveOccurred())
	kubelet.Script(name, Outcome{Stdout: out})
	return plainTool(name, ns)
}

var _ = Describe("tools/call results a model can use", Label("call", "results"), func() {
	for _, tr := range transports {
		Context("over "+string(tr), func() {
			It("gives a failing command's exit code, stdout and stderr, in the text and as structuredContent", func(ctx SpecContext) {
				ns := newNamespace(ctx)
				create(ctx, shTool("shfail", ns).Obj())
				cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{}), tr, "", nil)
				Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("shfail"))

				res := callTool(ctx, cs, "shfail", nil)
				Expect(res.IsError).To(BeTrue())
				Expect(text(res)).To(Equal("the command exited with code 1: --- FAIL: TestX\n\n" +
					"exitCode: 1\n" +
					fmt.Sprintf("stdout (%d bytes):\n", len(shStdout)) + "=== RUN TestX\n" + `\x1b[31m--- FAIL: TestX\x1b[0m` + "\n" +
					"stderr: --- FAIL: TestX"))
				Expect(res.StructuredContent).To(Equal(map[string]any{
					"isError": true, "error": "the command exited with code 1: --- FAIL: TestX", "exitCode": 1.0,
					"stdout": shStdout, "stderr": "--- FAIL: TestX",
				}))
				Expect(res.Meta).To(HaveKeyWithValue(gateway.MetaPhase, "Failed"))
				Expect(res.Meta).To(HaveKeyWithValue(gateway.MetaReason, "ToolError"))
				Expect(callOf(ctx, ns, res)).To(HavePhase(v1alpha1.PhaseFailed))
			})

			It("refuses arguments that are not an object with phase Refused, and creates no call", func(ctx SpecContext) {
				ns := newNamespace(ctx)
				create(ctx, echoTool(ns).Obj())
				cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{}), tr, "", nil)
				Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("echo"))

				res := callTool(ctx, cs, "echo", []string{"hi"})
				Expect(res.IsError).To(BeTrue())
				Expect(text(res)).To(ContainSubstring("must be a JSON object"))
				Expect(res.Meta).To(refusedFor(gateway.ReasonArgumentsNotJSONObject))
				Expect(toolCalls(ctx, ns)).To(BeEmpty())
			})
		})
	}

	It("sends no structuredContent on the error of a tool with an output schema (clients validate it), the text still whole", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, shTool("shschema", ns).Output(map[string]any{
			"type": "object", "properties": map[string]any{"matches": map[string]any{"type": "integer"}}, "required": []string{"matches"},
		}).Obj())
		cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{}), inMemory, "", nil)
		Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("shschema"))

		res := callTool(ctx, cs, "shschema", nil)
		Expect(res.IsError).To(BeTrue())
		Expect(res.StructuredContent).To(BeNil())
		Expect(text(res)).To(And(ContainSubstring("exitCode: 1"), ContainSubstring("=== RUN TestX"), ContainSubstring("stderr: --- FAIL")))
		Expect(res.Meta).To(HaveKeyWithValue(gateway.MetaReason, "ToolError"))
	})

	It("answers a create the API server forbids with a CreateForbidden refusal, not a protocol error", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		_, err := env.BindUserRole(ctx, ns, ApproverRole, "approver-carol") // reads tools, makes no calls
		Expect(err).NotTo(HaveOccurred())
		carol, err := env.UserConfig("approver-carol", nil)
		Expect(err).NotTo(HaveOccurred())
		cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{cfg: carol}), inMemory, "", nil)
		Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("echo"))

		res := callTool(ctx, cs, "echo", map[string]any{"text": "hi"})
		Expect(res.IsError).To(BeTrue())
		Expect(text(res)).To(And(ContainSubstring("the call was refused"), ContainSubstring("forbidden")))
		Expect(res.Meta).To(refusedFor(gateway.ReasonCreateForbidden))
		Expect(toolCalls(ctx, ns)).To(BeEmpty())
	})
})

// refusedFor matches the _meta of a tools/call the gateway refused for reason: phase
// Refused, no call.
func refusedFor(reason string) types.GomegaMatcher {
	return And(HaveKeyWithValue(gateway.MetaPhase, gateway.PhaseRefused), HaveKeyWithValue(gateway.MetaReason, reason),
		Not(HaveKey(gateway.MetaCall)))
}
