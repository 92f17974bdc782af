package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/internal/gateway"
)

// rawClient speaks JSON-RPC over streamable HTTP by hand: the Go SDK's client sends no task
// requests. In the 2025-11-25 protocol (a session; params.task, as the TypeScript SDK's
// client asks), or, when stateless, in 2026-07-28 with the Tasks extension declared in every
// request's capabilities.
type rawClient struct {
	url, session string
	id           int
	stateless    bool
	token        string // a bearer token, when set
}

// rawMessage is one JSON-RPC message the gateway sent.
type rawMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
}

// rawConnect serves g over HTTP and initializes a 2025-11-25 session; it returns the client
// and the initialize result.
func rawConnect(ctx SpecContext, g *gateway.Gateway) (*rawClient, map[string]any) {
	GinkgoHelper()
	srv := httptest.NewServer(g.HTTPHandler())
	DeferCleanup(srv.Close)
	return rawInitialize(ctx, &rawClient{url: srv.URL})
}

// rawInitialize initializes c's 2025-11-25 session.
func rawInitialize(ctx SpecContext, c *rawClient) (*rawClient, map[string]any) {
	GinkgoHelper()
	init := c.call(ctx, "initialize", map[string]any{
		"protocolVersion": legacyProtocol, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "0"},
	}, nil)
	Expect(init.Error).To(BeNil())
	Expect(c.session).NotTo(BeEmpty(), "the gateway gives a session")
	c.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil, nil)
	var res map[string]any
	Expect(json.Unmarshal(init.Result, &res)).To(Succeed())
	return c, res
}

// call sends a request and returns its response; each notification before it goes to seen.
func (c *rawClient) call(ctx context.Context, method string, params any, seen func(rawMessage)) rawMessage {
	GinkgoHelper()
	c.id++
	headers := map[string]string{}
	if c.stateless {
		params, headers = statelessRequest(method, params)
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	Expect(err).NotTo(HaveOccurred())
	var resp *rawMessage
	c.post(ctx, body, headers, func(m rawMessage) {
		switch {
		case m.Method != "" && seen != nil:
			seen(m)
		case m.Method == "":
			resp = &m
		}
	})
	Expect(resp).NotTo(BeNil(), "no response to %s", method)
	return *resp
}

// result is a successful response's result, decoded.
func (c *rawClient) result(ctx context.Context, method string, params any) map[string]any {
	GinkgoHelper()
	m := c.call(ctx, method, params, nil)
	Expect(m.Error).To(BeNil(), "%s failed", method)
	var out map[string]any
	Expect(json.Unmarshal(m.Result, &out)).To(Succeed())
	return out
}

// post sends body and hands each message of the answer (JSON or an event stream) to each.
func (c *rawClient) post(ctx context.Context, body []byte, headers map[string]string, each func(rawMessage)) {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", legacyProtocol)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(BeNumerically("<", 300), "POST %s", body)
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	if each == nil {
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		data, isData := strings.CutPrefix(line, "data: ")
		if !isData && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			continue
		}
		if !isData {
			data = line
		}
		var m rawMessage
		Expect(json.Unmarshal([]byte(data), &m)).To(Succeed(), data)
		each(m)
	}
}

// rawStateless is a client of g in the stateless protocol (2026-07-28) that declares the
// Tasks extension.
func rawStateless(g *gateway.Gateway) *rawClient {
	srv := httptest.NewServer(g.HTTPHandler())
	DeferCleanup(srv.Close)
	return &rawClient{url: srv.URL, stateless: true}
}

// statelessRequest adds the per-request _meta of 2026-07-28 (protocol, client, capabilities
// with the Tasks extension) to params and returns the headers the request needs.
func statelessRequest(method string, params any) (map[string]any, map[string]string) {
	GinkgoHelper()
	raw, err := json.Marshal(params)
	Expect(err).NotTo(HaveOccurred())
	var p map[string]any
	Expect(json.Unmarshal(raw, &p)).To(Succeed())
	if p == nil {
		p = map[string]any{}
	}
	p["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    statelessProtocol,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	headers := map[string]string{"Mcp-Protocol-Version": statelessProtocol, "Mcp-Method": method}
	switch name, _ := p["name"].(string); {
	case name != "":
		headers["Mcp-Name"] = name
	case p["taskId"] != nil:
		headers["Mcp-Name"], _ = p["taskId"].(string)
	}
	return p, headers
}

// taskID is the task id of a CreateTaskResult (2025-11-25: {task: {...}}).
func taskID(created map[string]any) string {
	GinkgoHelper()
	task, _ := created["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	Expect(id).NotTo(BeEmpty(), "no task in %v", created)
	return id
}
