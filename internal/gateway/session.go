package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaSession is the _meta key of a tools/call whose value names the client's own session
// (a string): with Options.SessionPerClient, the calls of one requester that carry the same
// value share a spec.session, and so a workspace. MCP 2026-07-28 has no session: stateless
// clients say which of their tasks a call belongs to with it. (A data-layer session,
// `io.modelcontextprotocol/session`, is a transports working group draft, not part of the
// revision; when it is, it can be read here too.)
const MetaSession = "toolgate.dev/session"

// maxSessionKey bounds a client's session key: it is hashed, never stored, but a bound
// keeps a log line short and a mistake (a whole document as the key) visible.
const maxSessionKey = 253

// clientSessionPrefix starts every spec.session derived from a client's session.
const clientSessionPrefix = "mcp-"

// sessionFor is the spec.session of the calls req makes as requester; an error is the
// text of a refusal (ReasonSessionKeyInvalid).
// Without Options.SessionPerClient it is Options.Session for every call (stdio: one
// process, one session). With it, each client session is its own: the request's
// _meta[MetaSession] when given, else its MCP session (the Mcp-Session-Id of the
// initialize handshake's clients), else none (a stateless request without a key: a
// workspace tool is then refused WorkspaceNeedsSession by the operator).
func (g *Gateway) sessionFor(requester string, req *mcp.CallToolRequest) (string, error) {
	if !g.opts.SessionPerClient {
		return g.opts.Session, nil
	}
	if v, ok := req.Params.Meta[MetaSession]; ok {
		key, isString := v.(string)
		if !isString || key == "" || len(key) > maxSessionKey {
			return "", fmt.Errorf("_meta[%q] must be a string of 1 to %d bytes naming the client's session", MetaSession, maxSessionKey)
		}
		return clientSession(requester, "meta", key), nil
	}
	if id := sessionID(req); id != "" {
		return clientSession(requester, "mcp-session-id", id), nil
	}
	return "", nil
}

// clientSession is the spec.session of a client's session key for requester: a pure
// function, so every replica and restart finds the same session, and one that includes
// the requester, so that no key names another identity's session (the operator keys
// workspace claims by requester as well: this holds even where spec.session is read). The
// MCP session ID, a bearer secret of its session, never reaches the ToolCall. source keeps
// a _meta key from naming the same session as an Mcp-Session-Id. 128 bits of SHA-256,
// valid as spec.session and as a label value.
func clientSession(requester, source, key string) string {
	sum := sha256.Sum256([]byte("toolgate-mcp-session\x00" + requester + "\x00" + source + "\x00" + key))
	return clientSessionPrefix + hex.EncodeToString(sum[:16])
}
