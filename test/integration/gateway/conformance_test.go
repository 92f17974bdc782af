package gateway_test

import (
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/test/internal/tsclient"
)

// conformancePasses are the server scenarios of the official MCP conformance suite
// (@modelcontextprotocol/conformance 0.1.16, pinned in test/ts/package.json) that test the
// protocol the gateway serves: each must pass against the authenticating HTTP gateway (no
// check FAILURE; WARNINGs are logged). The suite's client speaks 2025-11-25 (initialize and
// a session); the stateless 2026-07-28 protocol is not in it, so the Go SDK's client checks
// it after the suite, on the same gateway.
var conformancePasses = []string{
	"server-initialize",           // initialize: protocol version, serverInfo, capabilities
	"ping",                        // ping
	"logging-set-level",           // logging/setLevel answers {}
	"tools-list",                  // tools/list: each tool's name, description, inputSchema
	"resources-list",              // resources/list: a valid (empty) list
	"prompts-list",                // prompts/list: a valid (empty) list
	"server-sse-multiple-streams", // concurrent POST SSE streams on one session
	"dns-rebinding-protection",    // a foreign Host/Origin is refused (4xx), a localhost one served
}

// conformanceExcluded are the suite's other server scenarios, and why: each needs the
// reference "everything" server's fixtures, which toolgate's gateway deliberately does not
// serve. Its tools are Tool resources, run as Jobs (a Kubernetes name: no "_", so none of the
// fixture tools "test_*" can even exist); it offers no prompts, resources, completions or
// resource subscriptions (it declares the tools capability only, and answers -32601 to the
// methods it does not declare); and a tool's Job does not log to, sample from or elicit from
// the client.
var conformanceExcluded = map[string]string{
	"completion-complete":           "completion/complete: the completions capability is not declared (-32601)",
	"tools-call-simple-text":        "fixture tool test_simple_text",
	"tools-call-image":              "fixture tool test_image_content (image content)",
	"tools-call-audio":              "fixture tool test_audio_content (audio content)",
	"tools-call-embedded-resource":  "fixture tool test_embedded_resource (resource content)",
	"tools-call-mixed-content":      "fixture tool test_multiple_content_types",
	"tools-call-with-logging":       "fixture tool test_tool_with_logging (logs to the client)",
	"tools-call-error":              "fixture tool test_error_handling",
	"tools-call-with-progress":      "fixture tool test_tool_with_progress (toolgate's progress is its own: tasks_ts_test.go)",
	"tools-call-sampling":           "fixture tool test_sampling (sampling/createMessage to the client)",
	"tools-call-elicitation":        "fixture tool test_elicitation (elicitation/create to the client)",
	"json-schema-2020-12":           "fixture tool json_schema_2020_12_tool",
	"elicitation-sep1034-defaults":  "fixture tool test_elicitation_sep1034_defaults (elicitation)",
	"elicitation-sep1330-enums":     "fixture tool test_elicitation_sep1330_enums (elicitation)",
	"resources-read-text":           "fixture resource test://static-text",
	"resources-read-binary":         "fixture resource test://static-binary",
	"resources-templates-read":      "fixture resource template test://template/{id}/data",
	"resources-subscribe":           "resources/subscribe: the resources capability is not declared (-32601)",
	"resources-unsubscribe":         "resources/subscribe and unsubscribe: not declared (-32601)",
	"prompts-get-simple":            "fixture prompt test_simple_prompt",
	"prompts-get-with-args":         "fixture prompt test_prompt_with_arguments",
	"prompts-get-embedded-resource": "fixture prompt test_prompt_with_embedded_resource",
	"prompts-get-with-image":        "fixture prompt test_prompt_with_image",
	// Only SEP-1699's SHOULDs are left without test_reconnection (which closes its stream
	// mid-call): a priming event and retry: on a POST's SSE stream, for resuming it; the
	// gateway keeps no event store (a call outlives its stream as its ToolCall and task),
	// so it warns of both and passes no check.
	"server-sse-polling": "fixture tool test_reconnection; without it, SEP-1699's SHOULDs only (warnings)",
}

var _ = Describe("The official MCP conformance suite (0.1.16) against the HTTP gateway", Label("conformance", "http", "typescript"), func() {
	It("names each of its server scenarios here: passed or excluded, with why", func(ctx SpecContext) {
		out, err := tsclient.Conformance(ctx, tsSDK(), "", "list", "--server")
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		listed := regexp.MustCompile(`(?m)^\s+- (\S+) \[`).FindAllStringSubmatch(string(out), -1)
		var names, ours []string
		for _, m := range listed {
			names = append(names, m[1])
		}
		for name := range conformanceExcluded {
			ours = append(ours, name)
		}
		ours = append(ours, conformancePasses...)
		Expect(names).To(ConsistOf(ours))
	})

	It("passes the scenarios that test the protocol; a 2026-07-28 client then lists and calls tools statelessly", func(ctx SpecContext) {
		dir := tsSDK()
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		_, tok := serviceAccountAgent(ctx, ns, "conformance", gateway.DefaultAudience)
		url := startAuthGateway(ctx, ns, "", gateway.HTTPOptions{})
		for _, scenario := range conformancePasses {
			By(scenario)
			checks, out, err := tsclient.ServerScenario(ctx, dir, GinkgoT().TempDir(), url, tok, scenario)
			Expect(err).NotTo(HaveOccurred())
			var failed, warned []string
			for _, c := range checks {
				switch c.Status {
				case "FAILURE":
					failed = append(failed, c.ID+": "+c.ErrorMessage)
				case "WARNING":
					warned = append(warned, c.ID+": "+c.ErrorMessage)
				}
			}
			if len(warned) > 0 {
				GinkgoWriter.Printf("conformance %s warns:\n  %s\n", scenario, strings.Join(warned, "\n  "))
			}
			Expect(failed).To(BeEmpty(), "scenario %s:\n%s", scenario, out)
			Expect(slices.ContainsFunc(checks, func(c tsclient.Check) bool { return c.Status == "SUCCESS" })).To(BeTrue(), "scenario %s passed no check:\n%s", scenario, out)
		}

		By("the Go SDK's client, 2026-07-28: no handshake")
		cs := connectToken(ctx, url, tok, statelessProtocol)
		Expect(cs.InitializeResult().ProtocolVersion).To(Equal(statelessProtocol))
		Expect(toolNames(ctx, cs)).To(Equal([]string{"echo"}))
		res := callTool(ctx, cs, "echo", map[string]any{"text": "stateless"})
		Expect(res.IsError).To(BeFalse(), text(res))
		Expect(res.StructuredContent).To(Equal(map[string]any{"text": "stateless"}))
	})
})
