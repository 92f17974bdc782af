package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/gateway"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// askEverything parks every call of ns for approval.
func askEverything(ns string) *v1alpha1.ToolPolicy {
	return MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).VerdictRule("always", "true", v1alpha1.VerdictAsk).Obj()
}

// callNamed reads a call of ns.
func callNamed(ctx context.Context, ns, name string) *v1alpha1.ToolCall {
	GinkgoHelper()
	call := &v1alpha1.ToolCall{}
	Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, call)).To(Succeed())
	return call
}

// taskStatus polls tasks/get.
func taskStatus(ctx context.Context, c *rawClient, id string) func() string {
	return func() string {
		s, _ := c.result(ctx, "tasks/get", map[string]any{"taskId": id})["status"].(string)
		return s
	}
}

// resultText is the text of a CallToolResult decoded as a map.
func resultText(res map[string]any) string {
	GinkgoHelper()
	content, _ := res["content"].([]any)
	Expect(content).To(HaveLen(1))
	item, _ := content[0].(map[string]any)
	s, _ := item["text"].(string)
	return s
}

var _ = Describe("tools/call as an MCP Task (2025-11-25 form)", Label("tasks"), func() {
	It("declares tasks and an optional taskSupport on every tool", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		c, init := rawConnect(ctx, startGateway(ctx, ns, gatewayOptions{}))
		Expect(init).To(HaveKeyWithValue("capabilities", HaveKeyWithValue("tasks",
			HaveKeyWithValue("requests", HaveKeyWithValue("tools", HaveKey("call"))))))
		Eventually(func() []any {
			tools, _ := c.result(ctx, "tools/list", map[string]any{})["tools"].([]any)
			return tools
		}).WithContext(ctx).Should(ContainElement(And(HaveKeyWithValue("name", "echo"),
			HaveKeyWithValue("execution", HaveKeyWithValue("taskSupport", "optional")))))
	})

	It("goes input_required while parked, then completed with the result once approved", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), askEverything(ns))
		c, _ := rawConnect(ctx, startGateway(ctx, ns, gatewayOptions{}))
		created := c.result(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "deploy"}, "task": map[string]any{"ttl": 1000}})
		id := taskID(created)
		Expect(created["task"]).To(And(HaveKeyWithValue("status", "working"), // a task begins working
			HaveKeyWithValue("statusMessage", ContainSubstring("awaits human approval"))))
		Expect(created["task"]).To(HaveKeyWithValue("ttl", BeNil()), "the platform's retention, not the client's ttl")
		name, _, _ := strings.Cut(id, "/")

		Eventually(taskStatus(ctx, c, id)).WithContext(ctx).Should(Equal("input_required"))
		got := c.result(ctx, "tasks/get", map[string]any{"taskId": id})
		Expect(got["statusMessage"]).To(ContainSubstring("toolgate approve " + name + " -n " + ns))

		// tasks/result waits (as the TypeScript client does on input_required) until approved.
		done := make(chan map[string]any, 1)
		go func() {
			defer GinkgoRecover()
			done <- c.result(ctx, "tasks/result", map[string]any{"taskId": id})
		}()
		Consistently(done).WithTimeout(ConsistentDuration).ShouldNot(Receive(), "tasks/result waits for the approval")
		call := callNamed(ctx, ns, name)
		create(ctx, MakeToolCallApproval(name, ns).For(call).Obj())

		var res map[string]any
		Eventually(done).WithContext(ctx).Should(Receive(&res))
		Expect(res).NotTo(HaveKeyWithValue("isError", BeTrue()))
		Expect(resultText(res)).To(MatchJSON(`{"text":"deploy"}`))
		Expect(res).To(HaveKeyWithValue("_meta", HaveKeyWithValue("io.modelcontextprotocol/related-task", HaveKeyWithValue("taskId", id))))
		Expect(taskStatus(ctx, c, id)()).To(Equal("completed"))
	})

	It("completes a denied call's task with an isError result", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), askEverything(ns))
		c, _ := rawConnect(ctx, startGateway(ctx, ns, gatewayOptions{}))
		id := taskID(c.result(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "rm"}, "task": map[string]any{}}))
		Eventually(taskStatus(ctx, c, id)).WithContext(ctx).Should(Equal("input_required"))
		name, _, _ := strings.Cut(id, "/")
		create(ctx, MakeToolCallApproval(name, ns).For(callNamed(ctx, ns, name)).Deny().Reason("not today").Obj())

		Eventually(taskStatus(ctx, c, id)).WithContext(ctx).Should(Equal("completed"), "an isError result is a completed task")
		res := c.result(ctx, "tasks/result", map[string]any{"taskId": id})
		Expect(res).To(HaveKeyWithValue("isError", BeTrue()))
		Expect(res).To(HaveKeyWithValue("_meta", HaveKeyWithValue("toolgate.dev/phase", "Denied")))
	})

	It("cancels the call on tasks/cancel, as the caller, and keeps the record", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("slow", Outcome{Hold: true})
		create(ctx, plainTool("slow", ns).Obj())
		c, _ := rawConnect(ctx, startGateway(ctx, ns, gatewayOptions{}))
		id := taskID(c.result(ctx, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{}, "task": map[string]any{}}))
		name, _, _ := strings.Cut(id, "/")
		Eventually(func() v1alpha1.ToolCallPhase { return callNamed(ctx, ns, name).Status.Phase }).WithContext(ctx).
			Should(Equal(v1alpha1.PhaseRunning))

		Expect(c.result(ctx, "tasks/cancel", map[string]any{"taskId": id})).To(HaveKeyWithValue("status", "cancelled"))
		Eventually(func() *v1alpha1.ToolCall { return callNamed(ctx, ns, name) }).WithContext(ctx).
			Should(And(HavePhase(v1alpha1.PhaseFailed), HaveField("Status.Result.Reason", v1alpha1.ReasonCancelled)))
		Expect(taskStatus(ctx, c, id)()).To(Equal("cancelled"))
		again := c.call(ctx, "tasks/cancel", map[string]any{"taskId": id}, nil)
		Expect(again.Error).To(HaveField("Code", BeEquivalentTo(-32602)), "a cancelled task cannot be cancelled again")
	})

	It("is answered by a new gateway from the ToolCall alone, and to nobody else", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), askEverything(ns))
		first, _ := rawConnect(ctx, startGateway(ctx, ns, gatewayOptions{}))
		id := taskID(first.result(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}, "task": map[string]any{}}))

		restarted, _ := rawConnect(ctx, startGateway(ctx, ns, gatewayOptions{}))
		Eventually(taskStatus(ctx, restarted, id)).WithContext(ctx).Should(Equal("input_required"))

		_, err := env.BindUserRole(ctx, ns, AgentRole, "agent-mallory")
		Expect(err).NotTo(HaveOccurred())
		malloryCfg, err := env.UserConfig("agent-mallory", nil)
		Expect(err).NotTo(HaveOccurred())
		mallory, _ := rawConnect(ctx, startGateway(ctx, ns, gatewayOptions{cfg: malloryCfg}))
		name, _, _ := strings.Cut(id, "/")
		for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			m := mallory.call(ctx, method, map[string]any{"taskId": id}, nil)
			Expect(m.Error).To(HaveField("Code", BeEquivalentTo(-32602)), "%s of another identity's task", method)
		}
		Expect(callNamed(ctx, ns, name).Spec.Cancel).To(BeFalse())
		forged := first.call(ctx, "tasks/get", map[string]any{"taskId": name + "/not-its-uid"}, nil)
		Expect(forged.Error).To(HaveField("Code", BeEquivalentTo(-32602)))
	})

	It("over authenticating HTTP, answers and cancels a task only for the token's identity", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), askEverything(ns))
		_, aliceTok := serviceAccountAgent(ctx, ns, "alice", gateway.DefaultAudience)
		_, malloryTok := serviceAccountAgent(ctx, ns, "mallory", gateway.DefaultAudience)
		url := startAuthGateway(ctx, ns, "", gateway.HTTPOptions{})
		alice, _ := rawInitialize(ctx, &rawClient{url: url, token: aliceTok})
		mallory, _ := rawInitialize(ctx, &rawClient{url: url, token: malloryTok})
		Eventually(func() []any {
			tools, _ := alice.result(ctx, "tools/list", map[string]any{})["tools"].([]any)
			return tools
		}).WithContext(ctx).Should(HaveLen(1))
		id := taskID(alice.result(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}, "task": map[string]any{}}))
		name, _, _ := strings.Cut(id, "/")

		for _, method := range []string{"tasks/get", "tasks/cancel"} {
			m := mallory.call(ctx, method, map[string]any{"taskId": id}, nil)
			Expect(m.Error).To(HaveField("Code", BeEquivalentTo(-32602)), "%s of alice's task by mallory", method)
		}
		Expect(callNamed(ctx, ns, name).Spec.Cancel).To(BeFalse())
		Expect(taskStatus(ctx, alice, id)()).To(Equal("input_required"))
		Expect(alice.result(ctx, "tasks/cancel", map[string]any{"taskId": id})).To(HaveKeyWithValue("status", "cancelled"))
		Expect(callNamed(ctx, ns, name).Spec.Cancel).To(BeTrue())
	})

	It("answers a task request it refuses before making a call with a JSON-RPC error that says why", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		c, _ := rawConnect(ctx, startGateway(ctx, ns, gatewayOptions{}))
		Eventually(func() []any {
			tools, _ := c.result(ctx, "tools/list", map[string]any{})["tools"].([]any)
			return tools
		}).WithContext(ctx).Should(HaveLen(1))
		m := c.call(ctx, "tools/call", map[string]any{"name": "echo", "arguments": []int{1}, "task": map[string]any{}}, nil)
		Expect(m.Error).To(And(HaveField("Code", BeEquivalentTo(-32600)), HaveField("Message", ContainSubstring("must be a JSON object"))))
		Expect(toolCalls(ctx, ns)).To(BeEmpty())
	})
})

var _ = Describe("tools/call as an MCP Task (the 2026-07-28 extension)", Label("tasks"), func() {
	It("answers a parked call with a task whose tasks/get carries the result once approved", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), askEverything(ns))
		g := startGateway(ctx, ns, gatewayOptions{})
		c := rawStateless(g)
		Eventually(func() []any {
			tools, _ := c.result(ctx, "tools/list", map[string]any{})["tools"].([]any)
			return tools
		}).WithContext(ctx).Should(HaveLen(1))
		created := c.result(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "ship"}})
		Expect(created).To(And(HaveKeyWithValue("resultType", "task"), HaveKeyWithValue("status", "input_required"),
			HaveKeyWithValue("ttlMs", BeNil())))
		id, _ := created["taskId"].(string)
		name, _, _ := strings.Cut(id, "/")
		got := c.result(ctx, "tasks/get", map[string]any{"taskId": id})
		Expect(got).To(And(HaveKeyWithValue("resultType", "complete"), HaveKeyWithValue("status", "input_required"),
			HaveKeyWithValue("inputRequests", BeEmpty()), HaveKeyWithValue("statusMessage", ContainSubstring("toolgate approve "+name))))

		create(ctx, MakeToolCallApproval(name, ns).For(callNamed(ctx, ns, name)).Obj())
		Eventually(taskStatus(ctx, c, id)).WithContext(ctx).Should(Equal("completed"))
		got = c.result(ctx, "tasks/get", map[string]any{"taskId": id})
		Expect(got).To(HaveKeyWithValue("result", HaveKeyWithValue("structuredContent", HaveKeyWithValue("text", "ship"))))
	})

	It("acknowledges tasks/cancel and cancels the parked call, as the caller", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), askEverything(ns))
		c := rawStateless(startGateway(ctx, ns, gatewayOptions{}))
		Eventually(func() []any {
			tools, _ := c.result(ctx, "tools/list", map[string]any{})["tools"].([]any)
			return tools
		}).WithContext(ctx).Should(HaveLen(1))
		id, _ := c.result(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}})["taskId"].(string)
		Expect(c.result(ctx, "tasks/cancel", map[string]any{"taskId": id})).To(HaveKeyWithValue("resultType", "complete"))
		name, _, _ := strings.Cut(id, "/")
		Expect(callNamed(ctx, ns, name).Spec.Cancel).To(BeTrue())
		Expect(taskStatus(ctx, c, id)()).To(Equal("cancelled"))
		Expect(c.result(ctx, "tasks/cancel", map[string]any{"taskId": id})).To(HaveKeyWithValue("resultType", "complete"), "again: still an acknowledgement")
	})

	It("answers a call that ends quickly with its result, not a task", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		c := rawStateless(startGateway(ctx, ns, gatewayOptions{}))
		Eventually(func() []any {
			tools, _ := c.result(ctx, "tools/list", map[string]any{})["tools"].([]any)
			return tools
		}).WithContext(ctx).Should(HaveLen(1))
		res := c.result(ctx, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
		Expect(res).To(And(HaveKey("content"), Not(HaveKey("taskId"))))
	})
})

var _ = Describe("progress for clients without Tasks", Label("tasks"), func() {
	It("sends notifications/progress on phase changes and while the call runs past the bound", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("slow", Outcome{Hold: true})
		create(ctx, plainTool("slow", ns).Obj())
		g := startGateway(ctx, ns, gatewayOptions{waitBound: 3 * time.Second, progress: 500 * time.Millisecond})
		c, _ := rawConnect(ctx, g)
		var notes []map[string]any
		res := c.call(ctx, "tools/call", map[string]any{"name": "slow", "arguments": map[string]any{}, "_meta": map[string]any{"progressToken": "p1"}},
			func(m rawMessage) {
				if m.Method == "notifications/progress" {
					var p map[string]any
					Expect(json.Unmarshal(m.Params, &p)).To(Succeed())
					notes = append(notes, p)
				}
			})
		Expect(res.Error).To(BeNil())
		Expect(string(res.Result)).To(ContainSubstring("still running"))
		Expect(len(notes)).To(BeNumerically(">=", 4), "a phase change and ticks every 500ms over 3s: %v", notes)
		Expect(notes).To(HaveEach(HaveKeyWithValue("progressToken", "p1")))
		Expect(notes).To(ContainElement(HaveKeyWithValue("message", ContainSubstring("is Running"))))
		var last float64
		for _, n := range notes {
			Expect(n["progress"]).To(BeNumerically(">", last), "progress increases")
			last, _ = n["progress"].(float64)
		}
	})
})

var _ = Describe("a retried tools/call", Label("tasks"), func() {
	It("returns the parked call instead of parking another", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), askEverything(ns))
		cs := connect(ctx, startGateway(ctx, ns, gatewayOptions{session: "s1"}), inMemory, legacyProtocol, nil)
		Eventually(func() []string { return toolNames(ctx, cs) }).WithContext(ctx).Should(ContainElement("echo"))

		first := callTool(ctx, cs, "echo", map[string]any{"text": "deploy"})
		parked := callOf(ctx, ns, first)
		Expect(parked).To(HavePhase(v1alpha1.PhaseAwaitingApproval))
		// The same arguments in another key order are the same canonical arguments.
		retry := callTool(ctx, cs, "echo", json.RawMessage(` { "text" : "deploy" } `))
		Expect(retry.Meta).To(HaveKeyWithValue(gateway.MetaCall, parked.Name))
		Expect(toolCalls(ctx, ns)).To(HaveLen(1))

		other := callTool(ctx, cs, "echo", map[string]any{"text": "something else"})
		Expect(other.Meta[gateway.MetaCall]).NotTo(Equal(parked.Name), "other arguments are another call")

		// Calls of a session run in order (creation time, then name): the other call is
		// answered first, so that it cannot hold the approved one back.
		otherName, _ := other.Meta[gateway.MetaCall].(string)
		create(ctx, MakeToolCallApproval(otherName, ns).For(callNamed(ctx, ns, otherName)).Deny().Obj())
		create(ctx, MakeToolCallApproval(parked.Name, ns).For(callNamed(ctx, ns, parked.Name)).Obj())
		Eventually(func() *v1alpha1.ToolCall { return callNamed(ctx, ns, parked.Name) }).WithContext(ctx).
			Should(HavePhase(v1alpha1.PhaseSucceeded))
		after := callTool(ctx, cs, "echo", map[string]any{"text": "deploy"})
		Expect(after.Meta[gateway.MetaCall]).NotTo(Equal(parked.Name), "a finished call is history: a retry is a new call")
	})
})
