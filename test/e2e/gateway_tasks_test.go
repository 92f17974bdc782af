package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// approvalAsTask drives an approval as an MCP Task (the 2025-11-25 form the TypeScript SDK
// client speaks) against the in-cluster gateway: a sh command the example policy parks
// (it names curl) is a task that goes input_required; tasks/result waits; once the approver
// approves, it returns the command's output, and tasks/get says completed.
func approvalAsTask(ctx context.Context, url, token string) {
	c := &taskClient{url: url, token: token}
	c.initialize(ctx)
	nonce := time.Now().UnixNano()
	// `true curl` runs true: the policy sees curl, the command needs no network.
	created := c.result(ctx, "tools/call", map[string]any{"name": "sh",
		"arguments": map[string]any{"command": fmt.Sprintf("echo approved-%d; true curl", nonce)}, "task": map[string]any{}})
	task, _ := created["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	Expect(id).NotTo(BeEmpty(), "a task: %v", created)
	name, _, _ := strings.Cut(id, "/")
	call := &toolgatev1alpha1.ToolCall{}
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, call)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })

	Eventually(func() string {
		s, _ := c.result(ctx, "tasks/get", map[string]any{"taskId": id})["status"].(string)
		return s
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Equal("input_required"))
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, call)).To(Succeed())

	done := make(chan map[string]any, 1)
	go func() {
		defer GinkgoRecover()
		done <- c.result(ctx, "tasks/result", map[string]any{"taskId": id})
	}()
	approveAs(ctx, toolgatetest.MakeToolCallApproval(name, demoNS).For(call))
	var res map[string]any
	Eventually(done).WithContext(ctx).WithTimeout(callTimeout).Should(Receive(&res))
	Expect(res).NotTo(HaveKeyWithValue("isError", BeTrue()), "result: %v", res)
	Expect(fmt.Sprint(res["content"])).To(ContainSubstring(fmt.Sprintf("approved-%d", nonce)))
	Expect(c.result(ctx, "tasks/get", map[string]any{"taskId": id})).To(HaveKeyWithValue("status", "completed"))
}

// taskClient is a JSON-RPC client of the gateway by hand (2025-11-25, a session, a bearer
// token): the Go SDK's client sends no task requests.
type taskClient struct {
	url, token, session string
	id                  int
}

func (c *taskClient) initialize(ctx context.Context) {
	GinkgoHelper()
	c.result(ctx, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "e2e-tasks", "version": "0"}})
	c.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

// result sends a request and returns its result (failing on a JSON-RPC error).
func (c *taskClient) result(ctx context.Context, method string, params any) map[string]any {
	GinkgoHelper()
	c.id++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	Expect(err).NotTo(HaveOccurred())
	for _, data := range c.post(ctx, body) {
		var m struct {
			Method string          `json:"method"`
			Result map[string]any  `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		Expect(json.Unmarshal([]byte(data), &m)).To(Succeed(), data)
		if m.Method == "" {
			Expect(m.Error).To(BeNil(), "%s: %s", method, m.Error)
			return m.Result
		}
	}
	Fail("no response to " + method)
	return nil
}

// post sends body and returns the JSON-RPC messages of the answer (JSON or event stream).
func (c *taskClient) post(ctx context.Context, body []byte) []string {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(BeNumerically("<", 300), "POST %s", body)
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	var out []string
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, isData := strings.CutPrefix(sc.Text(), "data: ")
		if isData || !sse && strings.TrimSpace(data) != "" {
			out = append(out, data)
		}
	}
	return out
}
