package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessProtocol is the first MCP version without the initialize handshake: each
// request is one POST that carries its own protocol version.
const statelessProtocol = "2026-07-28"

// HTTPHandler serves this gateway's one identity over streamable HTTP without
// authenticating clients: every client acts as Options.Client. It is for tests and for
// embedding behind authentication of your own; `toolgate mcp --http` serves NewHTTP's
// handler, which authenticates every client and acts as each.
func (g *Gateway) HTTPHandler() http.Handler {
	stream := streamable(g.log, func(*http.Request) *mcp.Server { return g.server }, 0)
	cancelOnDelete := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			g.CancelSession(r.Header.Get(sessionHeader))
		}
		stream.ServeHTTP(w, r)
	})
	return http.NewCrossOriginProtection().Handler(rejectMalformed(cancelOnDelete, mcp.DefaultMaxRequestBodyBytes))
}

// sessionHeader is the streamable HTTP transport's session header.
const sessionHeader = "Mcp-Session-Id"

// streamable is the SDK's streamable HTTP transport for the servers getServer picks.
// Clients of the initialize handshake (protocol 2025-11-25 and before) get sessions, whose
// event stream carries list_changed, closed after idle without a request (0: never); a
// request they cancel (notifications/cancelled, or a DELETE of the session) is a
// cancelled call, a dropped connection is not (as that protocol has it). Requests of the
// stateless protocol (2026-07-28 and later) go to a stateless handler, where the POST is
// the request: closing it cancels the call.
func streamable(log logr.Logger, getServer func(*http.Request) *mcp.Server, idle time.Duration) http.Handler {
	logger := sdkLogger(log.WithName("http"))
	sessions := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Logger: logger, SessionTimeout: idle})
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger: logger, Stateless: true, PropagateRequestCancellation: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Protocol-Version") >= statelessProtocol {
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
}

// rejectMalformed answers a POST whose body is not JSON (-32700) or not JSON-RPC
// (-32600) itself, as a JSON-RPC error response without id, where the SDK would answer
// in plain text; a body over limit bytes is refused with 413 before it is read whole.
func rejectMalformed(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if int64(len(body)) > limit {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			_, _ = w.Write(rpcError(jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: the body is over %d bytes", limit)))
			return
		}
		if code, msg := checkJSONRPC(body); code != 0 {
			writeRPCError(w, code, msg)
			return
		}
		body = liftTaskParams(body)
		r.ContentLength = int64(len(body))
		r.Body = readCloser{bytes.NewReader(body), r.Body}
		next.ServeHTTP(w, r)
	})
}

type readCloser struct {
	io.Reader
	io.Closer
}

// checkJSONRPC returns a JSON-RPC error code and message when body is not one JSON-RPC
// message or a batch of them.
func checkJSONRPC(body []byte) (int64, string) {
	if !json.Valid(body) {
		return jsonrpc.CodeParseError, "parse error: the message is not valid JSON"
	}
	msgs := []json.RawMessage{body}
	if trimmed := bytes.TrimSpace(body); trimmed[0] == '[' {
		// A fresh slice: unmarshalling into msgs would write over body itself.
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil || len(batch) == 0 {
			return jsonrpc.CodeInvalidRequest, "invalid request: an empty or malformed batch"
		}
		msgs = batch
	}
	for _, m := range msgs {
		if _, err := jsonrpc.DecodeMessage(m); err != nil {
			return jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()
		}
	}
	return 0, ""
}

func writeRPCError(w http.ResponseWriter, code int64, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(rpcError(code, msg))
}

// rpcError is a JSON-RPC error response without id, newline-terminated: the answer to
// input that is not a JSON-RPC message, over HTTP and on stdio alike.
func rpcError(code int64, msg string) []byte {
	// A map of strings and numbers cannot fail to marshal.
	data, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
	return append(data, '\n')
}
