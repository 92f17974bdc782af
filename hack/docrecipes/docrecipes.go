// Package docrecipes finds the copy-paste recipes of docs/connect-your-agent.md that the e2e
// suite runs as the page writes them (test/e2e/connect_test.go, label "connect"). Connect
// lists every recipe a spec relies on, each with what the spec needs of it; this package's
// test fails when one is gone or changed past that, so the page and the specs cannot drift
// apart silently.
package docrecipes

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/toolgate/toolgate/internal/gateway"
)

// ConnectPage is the page, relative to the repository's root.
const ConnectPage = "docs/connect-your-agent.md"

// The headings (a prefix of the heading line) of the page's sections whose recipes run.
const (
	Stdio    = "## Claude Code and Claude Desktop (stdio)"
	HTTP     = "## Any MCP client over HTTP"
	Tasks    = "## Approvals and long calls"
	Sessions = "## One workspace per task"
)

// Recipe is the N-th (from 0) fenced block of language Lang in the section Heading.
type Recipe struct {
	Heading, Lang string
	N             int
	// Needs says what the spec that runs it relies on; nil: only that it is there.
	Needs func(block string) error
}

// The recipes the e2e specs run.
var (
	// `claude mcp add … -- COMMAND ARGS…`, run with a stand-in `claude` that prints its
	// arguments: the same command as the JSON config's.
	StdioAdd = Recipe{Heading: Stdio, Lang: "sh", Needs: contains("claude mcp add ", " -- ")}
	// The stdio JSON config, whose command and args the spec runs as an MCP stdio server.
	StdioJSON = Recipe{Heading: Stdio, Lang: "json", Needs: stdioServer}
	// The ServiceAccount, its RoleBinding, TOOLGATE_TOKEN and TOOLGATE_URL.
	HTTPSetup = Recipe{Heading: HTTP, Lang: "sh", Needs: contains("export TOOLGATE_TOKEN=", "export TOOLGATE_URL=")}
	// `claude mcp add --transport http …`, run with the stand-in `claude`.
	HTTPAdd = Recipe{Heading: HTTP, Lang: "sh", N: 1, Needs: contains("claude mcp add --transport http ", "$TOOLGATE_URL", "$TOOLGATE_TOKEN")}
	// The HTTP JSON config, with ${VAR}s the spec expands from the environment.
	HTTPJSON = Recipe{Heading: HTTP, Lang: "json", Needs: httpServer}
	// The approver's `toolgate approve CALL`.
	Approve = Recipe{Heading: Tasks, Lang: "sh", Needs: contains(" approve CALL")}
	// The TypeScript SDK's Tasks client, a whole ES module run by node.
	TasksJS = Recipe{Heading: Tasks, Lang: "js", Needs: contains("process.env.TOOLGATE_URL", "process.env.TOOLGATE_TOKEN", "callToolStream(", "console.log(")}
	// A second gateway with --session-per-client, started in the background.
	SessionsGateway = Recipe{Heading: Sessions, Lang: "sh", Needs: sessionsGateway}
	// The Go SDK's call with a session key in _meta.
	SessionsKey = Recipe{Heading: Sessions, Lang: "go", Needs: func(b string) error {
		if SessionKey(b) == "" {
			return fmt.Errorf("no Meta: mcp.Meta{%q: \"KEY\"}", gateway.MetaSession)
		}
		return nil
	}}
)

// Connect is every recipe of the page that e2e runs.
var Connect = []Recipe{StdioAdd, StdioJSON, HTTPSetup, HTTPAdd, HTTPJSON, Approve, TasksJS, SessionsGateway, SessionsKey}

// SessionsAddress is the address the sessions recipe's gateway listens on.
const SessionsAddress = "127.0.0.1:8091"

var (
	fenceRE   = regexp.MustCompile("^(\\s*)```(\\S*)\\s*$")
	sectionRE = regexp.MustCompile(`^#{1,2} `)
	keyRE     = regexp.MustCompile(`mcp\.Meta\{"` + regexp.QuoteMeta(gateway.MetaSession) + `": "([^"]+)"\}`)
)

// Block is the recipe's block in page, its fence's indentation removed.
func (r Recipe) Block(page string) (string, error) {
	lines := strings.Split(page, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, r.Heading) {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return "", fmt.Errorf("%s has no heading %q", ConnectPage, r.Heading)
	}
	n := 0
	for i := start; i < len(lines); i++ {
		if sectionRE.MatchString(lines[i]) {
			break
		}
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, lang := m[1], m[2]
		var body []string
		end := i + 1
		for ; end < len(lines); end++ {
			if strings.TrimSpace(lines[end]) == "```" {
				break
			}
			body = append(body, strings.TrimPrefix(lines[end], indent))
		}
		if lang == r.Lang {
			if n == r.N {
				return strings.Join(body, "\n") + "\n", nil
			}
			n++
		}
		i = end
	}
	return "", fmt.Errorf("%s: no %s block number %d under %q", ConnectPage, r.Lang, r.N+1, r.Heading)
}

// Check finds the recipe's block in page and checks what its spec needs of it.
func (r Recipe) Check(page string) error {
	b, err := r.Block(page)
	if err != nil {
		return err
	}
	if r.Needs != nil {
		if err := r.Needs(b); err != nil {
			return fmt.Errorf("%s, the %s block number %d under %q: %w", ConnectPage, r.Lang, r.N+1, r.Heading, err)
		}
	}
	return nil
}

// Server is one entry of an MCP client's "mcpServers".
type Server struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Type    string            `json:"type"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// OnlyServer is the one server of an MCP client's JSON config, and its name.
func OnlyServer(block string) (string, Server, error) {
	var cfg struct {
		MCPServers map[string]Server `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(block), &cfg); err != nil {
		return "", Server{}, fmt.Errorf("not JSON: %w", err)
	}
	if len(cfg.MCPServers) != 1 {
		return "", Server{}, fmt.Errorf("%d servers under mcpServers, want 1", len(cfg.MCPServers))
	}
	for name, s := range cfg.MCPServers {
		return name, s, nil
	}
	panic("unreachable")
}

// SessionKey is the _meta session key of the Go snippet, or "".
func SessionKey(block string) string {
	if m := keyRE.FindStringSubmatch(block); m != nil {
		return m[1]
	}
	return ""
}

func contains(parts ...string) func(string) error {
	return func(b string) error {
		for _, p := range parts {
			if !strings.Contains(b, p) {
				return fmt.Errorf("no %q", p)
			}
		}
		return nil
	}
}

func stdioServer(b string) error {
	_, s, err := OnlyServer(b)
	if err != nil {
		return err
	}
	if !strings.HasSuffix(s.Command, "/bin/toolgate") || !strings.HasPrefix(s.Command, "/path/to/toolgate/") {
		return fmt.Errorf("command %q, want /path/to/toolgate/bin/toolgate (the spec runs it from the checkout)", s.Command)
	}
	if !strings.Contains(strings.Join(s.Args, " "), " mcp") {
		return fmt.Errorf("args %q run no `mcp`", s.Args)
	}
	return nil
}

func httpServer(b string) error {
	_, s, err := OnlyServer(b)
	if err != nil {
		return err
	}
	if s.Type != "http" || s.URL != "${TOOLGATE_URL}" || s.Headers["Authorization"] != "Bearer ${TOOLGATE_TOKEN}" {
		return fmt.Errorf("want type http, url ${TOOLGATE_URL} and the header Authorization: Bearer ${TOOLGATE_TOKEN}, got %+v", s)
	}
	return nil
}

func sessionsGateway(b string) error {
	if err := contains(" mcp ", "--session-per-client", "--http "+SessionsAddress)(b); err != nil {
		return err
	}
	if !strings.HasSuffix(strings.TrimSpace(b), "&") {
		return fmt.Errorf("the gateway does not go to the background (&)")
	}
	return nil
}
