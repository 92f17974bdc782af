package gateway

import (
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// specSession is spec.session's validation (api/v1alpha1 ToolCallSpec.Session), and a
// label value's length, which the operator's claim labels need.
var specSession = regexp.MustCompile(`^[A-Za-z0-9._:/@+=-]{1,63}$`)

func callWithMeta(meta map[string]any) *mcp.CallToolRequest {
	return &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t", Meta: meta}}
}

func TestSessionFor(t *testing.T) {
	perClient := &Gateway{opts: Options{SessionPerClient: true}}
	alice := func(meta map[string]any) (string, error) { return perClient.sessionFor("alice", callWithMeta(meta)) }

	fixed, err := (&Gateway{opts: Options{Session: "task-42"}}).sessionFor("alice", callWithMeta(map[string]any{MetaSession: "k"}))
	if fixed != "task-42" || err != nil {
		t.Errorf("without SessionPerClient: got %q, %v; want Options.Session", fixed, err)
	}
	if s, err := alice(nil); s != "" || err != nil {
		t.Errorf("no key and no MCP session: got %q, %v; want no session", s, err)
	}
	k1, _ := alice(map[string]any{MetaSession: "task-1"})
	k1Again, _ := alice(map[string]any{MetaSession: "task-1"})
	k2, _ := alice(map[string]any{MetaSession: "task-2"})
	bob, _ := perClient.sessionFor("bob", callWithMeta(map[string]any{MetaSession: "task-1"}))
	if k1 != k1Again {
		t.Errorf("one key, two requests: %q and %q; want one session", k1, k1Again)
	}
	for _, other := range []string{k2, bob, clientSession("alice", "mcp-session-id", "task-1")} {
		if other == k1 {
			t.Errorf("another key, requester or source gives %q too", k1)
		}
	}
	for _, s := range []string{k1, k2, bob} {
		if !specSession.MatchString(s) || !strings.HasPrefix(s, clientSessionPrefix) {
			t.Errorf("session %q is no valid spec.session with prefix %q", s, clientSessionPrefix)
		}
	}
	for _, bad := range []any{"", 42, map[string]any{}, strings.Repeat("k", maxSessionKey+1)} {
		if s, err := alice(map[string]any{MetaSession: bad}); err == nil {
			t.Errorf("key %v: got session %q, want a refusal", bad, s)
		}
	}
	if _, err := alice(map[string]any{MetaSession: strings.Repeat("k", maxSessionKey)}); err != nil {
		t.Errorf("a key of %d bytes: %v", maxSessionKey, err)
	}
}
