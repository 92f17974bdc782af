package gateway_test

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/gateway"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/internal/tsclient"
)

// tsSDK is TOOLGATE_TS_SDK, test/ts: a directory whose node_modules holds the MCP TypeScript
// SDK (@modelcontextprotocol/sdk 1.32.x) and conformance suite; the spec is skipped without it.
func tsSDK() string {
	dir := os.Getenv("TOOLGATE_TS_SDK")
	if dir == "" {
		Skip("TOOLGATE_TS_SDK is not set: make test-integration sets it after `npm ci` in test/ts (make ts-sdk)")
	}
	return dir
}

// startTSTrial starts test/ts/tasks.mjs against url as tok (the SDK in tsSDK).
func startTSTrial(ctx context.Context, url, tok, mode, tool, args string, env ...string) *tsclient.Run {
	GinkgoHelper()
	run, err := tsclient.Start(ctx, tsSDK(), GinkgoT().TempDir(), "../../ts/tasks.mjs", env, url, tok, mode, tool, args)
	Expect(err).NotTo(HaveOccurred())
	return run
}

// parkedCall waits for the one call of ns to park.
func parkedCall(ctx context.Context, ns string) *v1alpha1.ToolCall {
	GinkgoHelper()
	Eventually(func() []v1alpha1.ToolCall { return toolCalls(ctx, ns) }).WithContext(ctx).
		Should(ConsistOf(HavePhase(v1alpha1.PhaseAwaitingApproval)))
	call := toolCalls(ctx, ns)[0]
	return &call
}

var _ = Describe("The TypeScript SDK's Tasks client (1.32.x)", Label("tasks", "typescript"), func() {
	for _, approve := range []bool{true, false} {
		It("follows an approval as a task to its result (approved: "+map[bool]string{true: "yes", false: "no, denied"}[approve]+")", func(ctx SpecContext) {
			ns := newNamespace(ctx)
			create(ctx, echoTool(ns).Obj(), askEverything(ns))
			_, tok := serviceAccountAgent(ctx, ns, "ts-agent", gateway.DefaultAudience)
			url := startAuthGateway(ctx, ns, "", gateway.HTTPOptions{})
			run := startTSTrial(ctx, url, tok, "task", "echo", `{"text":"from typescript"}`)

			call := parkedCall(ctx, ns)
			approval := MakeToolCallApproval(call.Name, ns).For(call)
			if !approve {
				approval = approval.Deny().Reason("not today")
			}
			// The SDK polls tasks/get (each second): answering before it saw input_required would
			// let it see working, then completed.
			Eventually(func() bool { return run.SawStatus("input_required") }).WithContext(ctx).Should(BeTrue())
			create(ctx, approval.Obj())
			got := run.MustWait()
			Expect(got.Error).To(BeEmpty())
			Expect(got.TaskSupport).To(Equal("optional"))
			Expect(got.TaskID).To(Equal(call.Name + "/" + string(call.UID)))
			Expect(got.Types).To(HaveExactElements("taskCreated", "taskStatus", "result"), "created, input_required, then tasks/result")
			Expect(got.Statuses).To(HaveExactElements("working", "input_required"))
			if approve {
				Expect(got.Result).NotTo(HaveKeyWithValue("isError", true))
				Expect(got.Result).To(HaveKeyWithValue("structuredContent", HaveKeyWithValue("text", "from typescript")))
			} else {
				Expect(got.Result).To(HaveKeyWithValue("isError", true), "a denial is a completed task with an isError result")
				Expect(got.Result).To(HaveKeyWithValue("_meta", HaveKeyWithValue(gateway.MetaPhase, "Denied")))
			}
		})
	}

	It("starts a task, answers tasks/get from another gateway and cancels it there, keeping the record", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("slow", Outcome{Hold: true})
		create(ctx, plainTool("slow", ns).Obj())
		_, tok := serviceAccountAgent(ctx, ns, "ts-agent", gateway.DefaultAudience)
		started := startTSTrial(ctx, startAuthGateway(ctx, ns, "", gateway.HTTPOptions{}), tok, "start", "slow", `{}`).MustWait()
		Expect(started.Error).To(BeEmpty())
		Expect(started.Types).To(HaveExactElements("taskCreated"), "the client stops at the task's creation")
		name, _, _ := strings.Cut(started.TaskID, "/")
		Eventually(func() v1alpha1.ToolCallPhase { return callNamed(ctx, ns, name).Status.Phase }).WithContext(ctx).
			Should(Equal(v1alpha1.PhaseRunning))

		other := startAuthGateway(ctx, ns, "", gateway.HTTPOptions{})
		Expect(startTSTrial(ctx, other, tok, "get", started.TaskID, "").MustWait().Task).To(HaveKeyWithValue("status", "working"))
		cancelled := startTSTrial(ctx, other, tok, "cancel", started.TaskID, "").MustWait()
		Expect(cancelled.Error).To(BeEmpty())
		Expect(cancelled.Task).To(HaveKeyWithValue("status", "cancelled"))
		Eventually(func() *v1alpha1.ToolCall { return callNamed(ctx, ns, name) }).WithContext(ctx).
			Should(And(HavePhase(v1alpha1.PhaseFailed), HaveField("Status.Result.Reason", v1alpha1.ReasonCancelled)))
		Expect(startTSTrial(ctx, other, tok, "get", started.TaskID, "").MustWait().Task).To(HaveKeyWithValue("status", "cancelled"))
	})

	It("gives two MCP sessions of one identity two workspaces (--session-per-client)", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		workspaceScope(ctx, ns)
		url := serveHTTP(startGateway(ctx, ns, gatewayOptions{scope: "coding", sessionPerClient: true}))
		got := startTSTrial(ctx, url, "", "sessions", wsWrite+","+wsRead, "").MustWait()
		Expect(got.Error).To(BeEmpty())
		Expect(got.Sessions).To(HaveLen(2))
		Expect(got.Sessions[0]).NotTo(Equal(got.Sessions[1]))
		Expect(got.Steps).To(HaveLen(5))
		Expect(got.Steps[1].Text).To(ContainSubstring(noFile), "the second session sees none of the first's files")
		Expect(got.Steps[3].StructuredContent).To(HaveKeyWithValue("content", "from the first session"))
		Expect(got.Steps[4].StructuredContent).To(HaveKeyWithValue("content", "from the second session"))
		first := callNamed(ctx, ns, got.Steps[0].Meta[gateway.MetaCall].(string)).Spec.Session
		second := callNamed(ctx, ns, got.Steps[2].Meta[gateway.MetaCall].(string)).Spec.Session
		Expect(first).NotTo(Equal(second))
	})

	It("keeps a call alive past the client's timeout through progress", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("slow", Outcome{Hold: true})
		create(ctx, plainTool("slow", ns).Obj())
		_, tok := serviceAccountAgent(ctx, ns, "ts-agent", gateway.DefaultAudience)
		gctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		s, err := gateway.NewHTTP(gctx, gateway.Options{Client: agentClient(ctx, env.Config, ns), Logger: GinkgoLogr.WithName("gateway"),
			WaitBound: 6 * time.Second, ProgressInterval: time.Second}, gateway.HTTPOptions{Config: env.Config})
		Expect(err).NotTo(HaveOccurred())
		srv := httptest.NewServer(s.Handler())
		DeferCleanup(srv.Close)
		url := srv.URL
		got := startTSTrial(ctx, url, tok, "progress", "slow", `{}`, "TIMEOUT_MS=2500").MustWait()
		Expect(got.Error).To(BeEmpty(), "the 2.5 s timeout was reset by progress")
		Expect(got.Progress).To(BeNumerically(">=", 4))
		Expect(got.Result).To(HaveKeyWithValue("_meta", HaveKeyWithValue(gateway.MetaReason, gateway.ReasonStillRunning)))
	})
})
