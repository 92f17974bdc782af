package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// shutdownGrace bounds an HTTP shutdown: open event streams are closed after it.
const shutdownGrace = 5 * time.Second

// statelessProtocol is the first MCP version without the initialize handshake: each
// request is one POST that carries its own protocol version.
const statelessProtocol = "2026-07-28"

// HTTPHandler serves clients over the streamable HTTP transport, with the SDK's DNS
// rebinding protection and cross-origin protection. Clients of the initialize handshake
// (protocol 2025-11-25 and before) get sessions, whose event stream carries list_changed;
// a request they cancel (notifications/cancelled, or a DELETE of the session) is a
// cancelled call, a dropped connection is not (as that protocol has it). Requests of the
// stateless protocol (2026-07-28 and later) go to a stateless handler, where the POST is
// the request: closing it cancels the call. A body that is not JSON-RPC is answered with
// a JSON-RPC error (parse error or invalid request) and HTTP 400.
func (g *Gateway) HTTPHandler() http.Handler {
	getServer := func(*http.Request) *mcp.Server { return g.server }
	logger := slog.New(logr.ToSlogHandler(g.log.WithName("http").V(1)))
	sessions := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Logger: logger})
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger: logger, Stateless: true, PropagateRequestCancellation: true,
	})
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Protocol-Version") >= statelessProtocol {
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
	return http.NewCrossOriginProtection().Handler(rejectMalformed(route))
}

func (g *Gateway) serveHTTP(ctx context.Context, addr string) error {
	srv := &http.Server{
		Addr:              addr,
		Handler:           g.HTTPHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		// Requests end with the gateway: their tools/calls are cancelled (and deleted).
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	failed := make(chan error, 1)
	go func() { failed <- srv.ListenAndServe() }()
	g.log.Info("Serving MCP over streamable HTTP", "address", addr)
	select {
	case err := <-failed:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	defer g.calls.Wait()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		// Open event streams outlive a graceful shutdown; close them.
		return srv.Close()
	}
	return nil
}

// rejectMalformed answers a POST whose body is not JSON (-32700) or not JSON-RPC
// (-32600) itself, as a JSON-RPC error response without id, where the SDK would answer
// in plain text. Everything else, oversized bodies included, goes on to the SDK.
func rejectMalformed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, mcp.DefaultMaxRequestBodyBytes+1))
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		if len(body) <= mcp.DefaultMaxRequestBodyBytes {
			if code, msg := checkJSONRPC(body); code != 0 {
				writeRPCError(w, code, msg)
				return
			}
		}
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
