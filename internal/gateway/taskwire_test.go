package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// On stdio, a tools/call's params.task (which the SDK would drop) reaches the tool handler
// as a task request, and the middleware answers with the handler's task; the initialize
// result declares tasks for tools/call.
func TestStdioTaskRequestReachesTheHandler(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v0"}, nil)
	server.AddReceivingMiddleware(taskMiddleware)
	server.AddTool(&mcp.Tool{Name: "x", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if slot := slotOf(ctx); slot != nil && slot.form == tasks20251125 {
				slot.created = &jsonResult{fields: map[string]any{"task": map[string]any{"taskId": "t-1"}}}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no task"}}}, nil
		})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() { _ = server.Run(ctx, stdioTransport(inR, outW)) }()
	lines := bufio.NewScanner(outR)
	ask := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatal("no answer")
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		res, _ := m["result"].(map[string]any)
		return res
	}
	init := ask(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	caps, _ := init["capabilities"].(map[string]any)
	if _, ok := caps["tasks"]; !ok {
		t.Errorf("initialize declares no tasks: %v", init)
	}
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	res := ask(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{},"task":{"ttl":1}}}`)
	if task, _ := res["task"].(map[string]any); task["taskId"] != "t-1" {
		t.Errorf("a task request was answered %v, not with the task", res)
	}
	res = ask(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{}}}`)
	if _, ok := res["task"]; ok || res["content"] == nil {
		t.Errorf("a plain tools/call was answered %v, not with its result", res)
	}
}
