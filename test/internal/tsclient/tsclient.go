// Package tsclient runs test/ts/tasks.mjs, a client of the gateway written with the official
// MCP TypeScript SDK (test/ts/package.json pins it; make ts-sdk installs it), for the gateway
// suites: the envtest one (test/integration/gateway) and the real-cluster one (test/e2e).
package tsclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// Trial is the JSON line tasks.mjs prints.
type Trial struct {
	TaskSupport string         `json:"taskSupport"`
	Types       []string       `json:"types"`
	Statuses    []string       `json:"statuses"`
	TaskID      string         `json:"taskId"`
	Task        map[string]any `json:"task"` // tasks/get's or tasks/cancel's answer
	Result      map[string]any `json:"result"`
	Error       string         `json:"error"`
	Progress    int            `json:"progress"`
	Millis      int64          `json:"ms"`       // how long the call took (mode progress)
	Steps       []Step         `json:"steps"`    // mode sessions
	Sessions    []string       `json:"sessions"` // mode sessions: the two MCP session IDs
}

// Step is one tools/call of mode sessions, as the gateway answered it.
type Step struct {
	Tool              string         `json:"tool"`
	IsError           bool           `json:"isError"`
	Meta              map[string]any `json:"meta"`
	StructuredContent map[string]any `json:"structuredContent"`
	Text              string         `json:"text"`
}

// Script is tasks.mjs in the repository at root.
func Script(root string) string { return filepath.Join(root, "test", "ts", "tasks.mjs") }

// Run is a started tasks.mjs.
type Run struct {
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
}

// lockedBuffer is a bytes.Buffer one may read while the process writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Start starts node running the script at script with args and env (added to this
// process's), with the SDK installed in sdkDir (a directory whose node_modules holds
// @modelcontextprotocol/sdk): ES modules resolve packages next to the script, so unless the
// script is in sdkDir it runs as a copy in a new directory of tmp that links sdkDir's
// node_modules. ctx bounds the process.
func Start(ctx context.Context, sdkDir, tmp, script string, env []string, args ...string) (*Run, error) {
	if _, err := os.Stat(filepath.Join(sdkDir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		return nil, fmt.Errorf("the MCP TypeScript SDK in %s (make ts-sdk): %w", sdkDir, err)
	}
	if filepath.Clean(filepath.Dir(script)) != filepath.Clean(sdkDir) {
		body, err := os.ReadFile(script)
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp(tmp, "ts-client-")
		if err != nil {
			return nil, err
		}
		modules, err := filepath.Abs(filepath.Join(sdkDir, "node_modules"))
		if err != nil {
			return nil, err
		}
		if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
			return nil, err
		}
		script = filepath.Join(dir, filepath.Base(script))
		if err := os.WriteFile(script, body, 0o600); err != nil {
			return nil, err
		}
	}
	r := &Run{cmd: exec.CommandContext(ctx, "node", append([]string{script}, args...)...)}
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	return r, r.cmd.Start()
}

// SawStatus reports whether the script (mode task or start) has seen its task in status:
// it prints a line {"status":...} as it sees each, before it acts on it (for
// input_required, before it waits on tasks/result).
func (r *Run) SawStatus(status string) bool {
	return strings.Contains(r.stdout.String(), `{"status":"`+status+`"}`+"\n")
}

// MustWait is Wait in a Ginkgo spec: it fails the spec on an error.
func (r *Run) MustWait() Trial {
	ginkgo.GinkgoHelper()
	t, err := r.Wait()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return t
}

// Wait waits for the script to exit and returns the JSON line it printed last.
func (r *Run) Wait() (Trial, error) {
	var t Trial
	if err := r.cmd.Wait(); err != nil {
		return t, fmt.Errorf("node %s (the token not shown): %w\nstdout %s\nstderr %s", filepath.Base(r.cmd.Args[1]), err, r.stdout.String(), r.stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(r.stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &t); err != nil {
		return t, fmt.Errorf("what tasks.mjs printed: %w\nstdout %s\nstderr %s", err, r.stdout.String(), r.stderr.String())
	}
	return t, nil
}
