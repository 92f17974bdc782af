package gateway

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineSink hands every line written to it to a channel.
type lineSink chan []byte

func (s lineSink) Write(p []byte) (int, error) {
	s <- append([]byte(nil), p...)
	return len(p), nil
}

// A client's bad lines on stdio get JSON-RPC errors and the session goes on: the ping
// after them is answered.
func TestStdioAnswersBadLinesAndGoesOn(t *testing.T) {
	inR, inW := io.Pipe()
	out := make(lineSink, 16)
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, stdioTransport(inR, out)) }()

	send := func(line string) {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("writing %q: %v", line, err)
		}
	}
	next := func() map[string]any {
		select {
		case line := <-out:
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("output line %q is not JSON: %v", line, err)
			}
			return m
		case <-ctx.Done():
			t.Fatal("no answer")
			return nil
		}
	}
	errorCode := func(m map[string]any) float64 {
		e, ok := m["error"].(map[string]any)
		if !ok || m["id"] != nil {
			t.Fatalf("want a JSON-RPC error with id null, got %v", m)
		}
		return e["code"].(float64)
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if m := next(); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize answer: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`this is not json`)
	if code := errorCode(next()); code != -32700 {
		t.Errorf("not JSON: code %v, want -32700", code)
	}
	send(`{"hello":"world"}`)
	if code := errorCode(next()); code != -32600 {
		t.Errorf("not JSON-RPC: code %v, want -32600", code)
	}
	send(`[{"jsonrpc":"2.0","id":7,"method":"ping"}]`)
	if code := errorCode(next()); code != -32600 {
		t.Errorf("a batch: code %v, want -32600", code)
	}
	send(``)
	send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := next(); m["id"] != float64(2) || m["result"] == nil {
		t.Fatalf("ping answer: %v", m)
	}
	if err := inW.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done: // the end of stdin ends the session
		t.Logf("session ended: %v", err)
	case <-ctx.Done():
		t.Fatal("the session did not end with stdin")
	}
}
