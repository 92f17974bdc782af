package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/internal/tsclient"
)

// The official MCP TypeScript SDK's client (1.32.x, test/ts/tasks.mjs through
// test/internal/tsclient) on the real cluster (issue 33, the first "done when"): the chart's
// gateway as a ServiceAccount where a spec needs only a gateway, and a gateway process of
// the spec's own (from this checkout) where it restarts it. The envtest suite shows the same
// with a simulated kubelet (test/integration/gateway/tasks_ts_test.go).
var _ = Describe("the MCP gateway to the TypeScript SDK's client", Ordered, ContinueOnFailure, Label("gateway", "typescript", "tasks"), func() {
	const sa = "e2e-ts-agent"
	user := "system:serviceaccount:" + demoNS + ":" + sa
	var url, token string

	BeforeAll(func(ctx SpecContext) {
		url, _ = inClusterGateway(ctx, sa)
	}, NodeTimeout(3*time.Minute))
	BeforeEach(func(ctx SpecContext) { // a token lives 10 minutes: one per spec
		token = mintToken(ctx, sa, "toolgate")
	}, NodeTimeout(time.Minute))

	It("gives the model a failing sh command's exit code, stdout and stderr", func(ctx SpecContext) {
		nonce := time.Now().UnixNano()
		command := fmt.Sprintf("echo out-%d; echo err-%d >&2; exit 3", nonce, nonce)
		got := runTS(ctx, []string{"TIMEOUT_MS=120000"}, url, token, "progress", "sh", argsJSON(map[string]any{"command": command}))
		Expect(got.Error).To(BeEmpty())
		deleteCallOf(got.Result)
		Expect(got.Result).To(HaveKeyWithValue("isError", true))
		Expect(got.Result).To(HaveKeyWithValue("structuredContent", And(
			HaveKeyWithValue("exitCode", BeNumerically("==", 3)),
			HaveKeyWithValue("stdout", fmt.Sprintf("out-%d\n", nonce)),
			HaveKeyWithValue("stderr", fmt.Sprintf("err-%d\n", nonce)))))
		text := fmt.Sprint(got.Result["content"])
		Expect(text).To(ContainSubstring(fmt.Sprintf("the command exited with code 3: err-%d", nonce)))
		Expect(text).To(ContainSubstring("exitCode: 3"))
		Expect(text).To(ContainSubstring(fmt.Sprintf("out-%d", nonce)))
		Expect(got.Result).To(HaveKeyWithValue("_meta", And(
			HaveKeyWithValue(gateway.MetaPhase, "Failed"), HaveKeyWithValue(gateway.MetaReason, "ToolError"))))
	}, SpecTimeout(3*time.Minute))

	for _, approve := range []bool{true, false} {
		It("follows an approval as a task: input_required, then completed (approved: "+map[bool]string{true: "the result", false: "denied, isError"}[approve]+")", func(ctx SpecContext) {
			nonce := fmt.Sprint(time.Now().UnixNano())
			// `true curl` runs true: the demo policy sees curl and parks the call; no network.
			run := startTS(ctx, nil, url, token, "task", "sh", argsJSON(map[string]any{"command": "echo approved-" + nonce + "; true curl"}))

			var call *toolgatev1alpha1.ToolCall
			Eventually(func(g Gomega) {
				call = gatewayCallIn(ctx, g, "sh", toolgatev1alpha1.PhaseAwaitingApproval, func(c *toolgatev1alpha1.ToolCall) bool {
					return strings.Contains(string(c.Spec.Arguments.Raw), nonce)
				})
			}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
			deleteWithApproval(call)
			Expect(call.Spec.Requester).To(Equal(user))
			answer := toolgatetest.MakeToolCallApproval(call.Name, demoNS).For(waitParked(ctx, call))
			if !approve {
				answer = answer.Deny()
			}
			// The SDK polls tasks/get (each second): answering before it saw input_required would
			// let it see working, then completed.
			Eventually(func() bool { return run.SawStatus("input_required") }).
				WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(BeTrue())
			approveAs(ctx, answer)

			got := run.MustWait()
			Expect(got.Error).To(BeEmpty())
			Expect(got.TaskSupport).To(Equal("optional"))
			Expect(got.TaskID).To(Equal(gateway.TaskID(call)))
			// The SDK yields each tasks/get it polls (taskStatus) until input_required, then waits
			// on tasks/result.
			polls := len(got.Statuses) - 1 // the first status is the created task's
			Expect(got.Types).To(HaveExactElements(append(append([]any{"taskCreated"}, repeat("taskStatus", polls)...), "result")...))
			Expect(got.Statuses).To(HaveExactElements(append(repeat("working", polls), "input_required")...))
			if approve {
				Expect(got.Result).NotTo(HaveKeyWithValue("isError", true), "result %v", got.Result)
				Expect(got.Result).To(HaveKeyWithValue("structuredContent", HaveKeyWithValue("stdout", "approved-"+nonce+"\n")))
				Expect(got.Result).To(HaveKeyWithValue("_meta", HaveKeyWithValue(gateway.MetaPhase, "Succeeded")))
			} else {
				Expect(got.Result).To(HaveKeyWithValue("isError", true), "a denial is a completed task with an isError result")
				Expect(got.Result).To(HaveKeyWithValue("_meta", HaveKeyWithValue(gateway.MetaPhase, "Denied")))
			}
			final := runTS(ctx, nil, url, token, "get", got.TaskID)
			Expect(final.Task).To(HaveKeyWithValue("status", "completed"))
		}, SpecTimeout(4*time.Minute))
	}

	// The SDK's default request timeout is 60 s; the client here sets 15 s so that the spec
	// lasts half a minute, not two: the point is a call that outlives the client's timeout,
	// kept alive only because each progress notification (every 10 s, the gateway's
	// progressEvery, and on each phase change) resets it.
	It("keeps a call alive past the client's request timeout through progress", func(ctx SpecContext) {
		createTool(ctx, longSleepTool())
		waitListed(ctx, connectBearer(ctx, url, token, ""), longSleep)
		const timeout, seconds = 15_000, 25
		got := runTS(ctx, []string{fmt.Sprintf("TIMEOUT_MS=%d", timeout)}, url, token, "progress", longSleep,
			argsJSON(map[string]any{"seconds": seconds}))
		deleteCallOf(got.Result)
		Expect(got.Error).To(BeEmpty(), "the %d ms timeout was reset by progress", timeout)
		Expect(got.Millis).To(BeNumerically(">", timeout+1000), "the call outlived the client's timeout")
		Expect(got.Progress).To(BeNumerically(">=", 2))
		Expect(got.Result).NotTo(HaveKeyWithValue("isError", true), "result %v", got.Result)
		Expect(got.Result).To(HaveKeyWithValue("_meta", HaveKeyWithValue(gateway.MetaPhase, "Succeeded")))
	}, SpecTimeout(3*time.Minute))

	It("cancels a task with tasks/cancel: the Pod goes, the call stays Cancelled, tasks/get says cancelled", func(ctx SpecContext) {
		createTool(ctx, longSleepTool())
		waitListed(ctx, connectBearer(ctx, url, token, ""), longSleep)
		started := runTS(ctx, nil, url, token, "start", longSleep, argsJSON(map[string]any{"seconds": 600}))
		Expect(started.Error).To(BeEmpty())
		call := taskCall(ctx, started.TaskID)
		Eventually(func(g Gomega) bool { return runningPod(ctx, g, call) }).
			WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(BeTrue(), "the body runs in a real Pod")

		cancelled := runTS(ctx, nil, url, token, "cancel", started.TaskID)
		Expect(cancelled.Error).To(BeEmpty())
		Expect(cancelled.Task).To(HaveKeyWithValue("status", "cancelled"))
		expectCancelledOnCluster(ctx, call, user)
		Expect(runTS(ctx, nil, url, token, "get", started.TaskID).Task).To(HaveKeyWithValue("status", "cancelled"), "the record answers")
	}, SpecTimeout(4*time.Minute))

	It("answers tasks/get from a restarted gateway, from the ToolCall", func(ctx SpecContext) {
		bin := buildToolgate(ctx)
		first, kill := startLocalGateway(ctx, bin)
		waitListed(ctx, connectBearer(ctx, first, token, ""), "sh")
		nonce := fmt.Sprint(time.Now().UnixNano())
		started := runTS(ctx, nil, first, token, "start", "sh", argsJSON(map[string]any{"command": "echo restarted-" + nonce + "; true curl"}))
		Expect(started.Error).To(BeEmpty())
		call := taskCall(ctx, started.TaskID)
		deleteWithApproval(call)
		parked := waitParked(ctx, call)

		By("the gateway that made the task is killed; another one starts")
		kill()
		second, _ := startLocalGateway(ctx, bin)
		var got tsclient.Trial
		Eventually(func(g Gomega) {
			got = runTS(ctx, nil, second, token, "get", started.TaskID)
			g.Expect(got.Error).To(BeEmpty())
			g.Expect(got.Task).To(HaveKeyWithValue("status", "input_required"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(2 * time.Second).Should(Succeed())

		By("a person approves; the new gateway's tasks/get then says completed, with the result")
		approveAs(ctx, toolgatetest.MakeToolCallApproval(call.Name, demoNS).For(parked))
		Eventually(func(g Gomega) {
			got = runTS(ctx, nil, second, token, "get", started.TaskID)
			g.Expect(got.Task).To(HaveKeyWithValue("status", "completed"))
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(2 * time.Second).Should(Succeed())
		Expect(got.Result).NotTo(HaveKeyWithValue("isError", true), "result %v", got.Result)
		Expect(got.Result).To(HaveKeyWithValue("structuredContent", HaveKeyWithValue("stdout", "restarted-"+nonce+"\n")))
	}, SpecTimeout(5*time.Minute))
})

// startTS starts test/ts/tasks.mjs with args and env (the SDK from TOOLGATE_TS_SDK, as the
// envtest suite takes it, else this checkout's test/ts, where make test-e2e installs it:
// make ts-sdk).
func startTS(ctx context.Context, env []string, args ...string) *tsclient.Run {
	GinkgoHelper()
	sdk := os.Getenv("TOOLGATE_TS_SDK")
	if sdk == "" {
		sdk = filepath.Join(root, "test", "ts")
	}
	run, err := tsclient.Start(ctx, sdk, GinkgoT().TempDir(), tsclient.Script(root), env, args...)
	Expect(err).NotTo(HaveOccurred(), "make ts-sdk (make test-e2e runs it)")
	return run
}

// runTS runs test/ts/tasks.mjs to its end (startTS).
func runTS(ctx context.Context, env []string, args ...string) tsclient.Trial {
	GinkgoHelper()
	return startTS(ctx, env, args...).MustWait()
}

// repeat is n times v.
func repeat(v any, n int) []any {
	out := make([]any, max(n, 0))
	for i := range out {
		out[i] = v
	}
	return out
}

// argsJSON is a tool call's arguments as tasks.mjs takes them.
func argsJSON(args map[string]any) string {
	GinkgoHelper()
	data, err := json.Marshal(args)
	Expect(err).NotTo(HaveOccurred())
	return string(data)
}

// taskCall is the ToolCall a task id names (name/uid), deleted when the spec ends.
func taskCall(ctx context.Context, id string) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	name, uid, _ := strings.Cut(id, "/")
	call := &toolgatev1alpha1.ToolCall{}
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, call)).To(Succeed(), "task %s", id)
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })
	Expect(string(call.UID)).To(Equal(uid))
	return call
}

// deleteCallOf deletes, when the spec ends, the call a tools/call result names (_meta).
func deleteCallOf(result map[string]any) {
	meta, _ := result["_meta"].(map[string]any)
	if name, _ := meta[gateway.MetaCall].(string); name != "" {
		call := &toolgatev1alpha1.ToolCall{}
		call.Name, call.Namespace = name, demoNS
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })
	}
}

// deleteWithApproval deletes the call and its approval (same name) when the spec ends.
func deleteWithApproval(call *toolgatev1alpha1.ToolCall) {
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(admin.Delete(ctx, call.DeepCopy()))).To(Succeed())
		answer := &toolgatev1alpha1.ToolCallApproval{}
		answer.Name, answer.Namespace = call.Name, call.Namespace
		Expect(client.IgnoreNotFound(admin.Delete(ctx, answer))).To(Succeed())
	})
}

// A workspace per MCP session (issue 33 item 4) to the TypeScript SDK's client, as
// gateway_sessions_test.go shows it to the Go SDK's: the per-client sessions gateway on a
// workspace scope of the spec's own, one ServiceAccount's token in two MCP sessions.
var _ = Describe("the MCP gateway with a workspace per client session, to the TypeScript SDK's client", Label("gateway", "typescript", "workspace"), func() {
	It("gives two MCP sessions of one ServiceAccount two workspaces", func(ctx SpecContext) {
		const sa = "e2e-ts-session-agent"
		scope := workspaceScopeRetained(ctx, wsRetentionKept)
		user := scopeServiceAccount(ctx, scope, sa)
		url := startSessionGateway(ctx, scope)
		got := runTS(ctx, nil, url, mintToken(ctx, sa, "toolgate"), "sessions")
		Expect(got.Error).To(BeEmpty())
		Expect(got.Sessions).To(HaveLen(2))
		Expect(got.Sessions[0]).NotTo(Equal(got.Sessions[1]), "two MCP sessions")
		Expect(got.Steps).To(HaveLen(5))
		sessions := make([]string, len(got.Steps))
		for i, st := range got.Steps {
			deleteCallOf(map[string]any{"_meta": st.Meta})
			name, _ := st.Meta[gateway.MetaCall].(string)
			var call toolgatev1alpha1.ToolCall
			Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, &call)).To(Succeed(), "step %d: %+v", i+1, st)
			Expect(call.Spec.Requester).To(Equal(user))
			Expect(call.Spec.Scope).To(Equal(scope))
			Expect(call.Spec.Session).To(HavePrefix("mcp-"))
			sessions[i] = call.Spec.Session
		}
		Expect(got.Steps[0].IsError).To(BeFalse(), "write_file: %+v", got.Steps[0])
		Expect(got.Steps[1].IsError).To(BeTrue())
		Expect(got.Steps[1].Text).To(ContainSubstring("no such file"), "the second session sees none of the first's files")
		Expect(got.Steps[2].IsError).To(BeFalse(), "write_file: %+v", got.Steps[2])
		Expect(got.Steps[3].StructuredContent).To(HaveKeyWithValue("content", "from the first session"))
		Expect(got.Steps[4].StructuredContent).To(HaveKeyWithValue("content", "from the second session"))
		Expect(sessions).To(HaveExactElements(sessions[0], sessions[1], sessions[1], sessions[0], sessions[1]))
		Expect(sessions[0]).NotTo(Equal(sessions[1]), "two spec.sessions, so two workspaces")
	}, SpecTimeout(5*time.Minute))
})
