package tsclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Check is one check of a scenario of the official MCP conformance suite, as its
// checks.json holds it; Status is SUCCESS, FAILURE, WARNING, SKIPPED or INFO.
type Check struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	Status       string         `json:"status"`
	ErrorMessage string         `json:"errorMessage"`
	Details      map[string]any `json:"details"`
}

// conformanceCLI is the suite's command in sdkDir's node_modules.
func conformanceCLI(sdkDir string) string {
	return filepath.Join(sdkDir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
}

// Conformance runs the official MCP conformance suite (@modelcontextprotocol/conformance, in
// sdkDir's node_modules: test/ts, make ts-sdk) with args, through sdkDir's conformance/preload.mjs,
// which sends token as a bearer token on every request when it is not empty. It returns what
// the command printed and its error.
func Conformance(ctx context.Context, sdkDir, token string, args ...string) ([]byte, error) {
	cli := conformanceCLI(sdkDir)
	if _, err := os.Stat(cli); err != nil {
		return nil, fmt.Errorf("the MCP conformance suite in %s (make ts-sdk): %w", sdkDir, err)
	}
	cmd := exec.CommandContext(ctx, "node", append([]string{"--import", filepath.Join(sdkDir, "conformance", "preload.mjs"), cli}, args...)...)
	cmd.Env = append(os.Environ(), "TOOLGATE_TOKEN="+token)
	return cmd.CombinedOutput()
}

// ServerScenario runs the conformance suite's server scenario against url as token, keeping
// its results in a new directory of tmp, and returns its checks and what it printed. A
// scenario that fails exits non-zero: only an error with no checks.json is returned.
func ServerScenario(ctx context.Context, sdkDir, tmp, url, token, scenario string) ([]Check, string, error) {
	dir, err := os.MkdirTemp(tmp, "conformance-")
	if err != nil {
		return nil, "", err
	}
	out, runErr := Conformance(ctx, sdkDir, token, "server", "--url", url, "--scenario", scenario, "-o", dir)
	found, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if len(found) != 1 {
		if runErr == nil {
			runErr = errors.New("it exited 0")
		}
		return nil, string(out), fmt.Errorf("scenario %s left %d checks.json (%w): %s", scenario, len(found), runErr, out)
	}
	body, err := os.ReadFile(found[0])
	if err != nil {
		return nil, string(out), err
	}
	var checks []Check
	if err := json.Unmarshal(body, &checks); err != nil {
		return nil, string(out), fmt.Errorf("%s: %w", found[0], err)
	}
	return checks, string(out), nil
}
