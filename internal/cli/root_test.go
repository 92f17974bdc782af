package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestExecuteWithoutCluster covers what is decided before any request: usage errors exit
// 3 and name the problem, help and version exit 0. The kubeconfig points nowhere, so a
// command that tried to connect would fail differently (exit 6).
func TestExecuteWithoutCluster(t *testing.T) {
	nowhere := "--kubeconfig=" + filepath.Join(t.TempDir(), "missing")
	cases := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantOut    string
		wantErrOut string
	}{
		{name: "help", args: nil, wantCode: ExitOK, wantOut: "Available Commands:"},
		{name: "version", args: []string{"version"}, wantCode: ExitOK, wantOut: "toolgate "},
		{name: "unknown command", args: []string{"bogus"}, wantCode: ExitUsage, wantErrOut: `unknown command "bogus"`},
		{name: "unknown flag", args: []string{"get", "--bogus"}, wantCode: ExitUsage, wantErrOut: "unknown flag: --bogus\nSee 'toolgate get --help'."},
		{name: "call needs a tool", args: []string{"call"}, wantCode: ExitUsage, wantErrOut: "requires at least 1 arg"},
		{name: "bad JSON", args: []string{"call", "echo", "--args", `{"text": hi}`, nowhere}, wantCode: ExitUsage,
			wantErrOut: "error: --args: invalid JSON at line 1, column 10 (offset 10): invalid character 'h'"},
		{name: "bad JSON on stdin", args: []string{"call", "echo", "--args-file", "-", nowhere}, stdin: "{\n  \"a\": ,\n}", wantCode: ExitUsage,
			wantErrOut: "error: --args-file -: invalid JSON at line 2, column 8"},
		{name: "missing args file", args: []string{"call", "echo", "--args-file", "/nonexistent/args.json", nowhere}, wantCode: ExitUsage,
			wantErrOut: "--args-file: open /nonexistent/args.json"},
		{name: "both --args and --args-file", args: []string{"call", "echo", "--args", "{}", "--args-file", "x", nowhere}, wantCode: ExitUsage,
			wantErrOut: "mutually exclusive"},
		{name: "not key=value", args: []string{"call", "echo", "text", nowhere}, wantCode: ExitUsage, wantErrOut: `argument "text" is not key=value`},
		{name: "bad output format", args: []string{"get", "-o", "xml", nowhere}, wantCode: ExitUsage, wantErrOut: `unknown output format "xml"`},
		{name: "bad duration", args: []string{"call", "echo", "--timeout", "soon"}, wantCode: ExitUsage, wantErrOut: `invalid argument "soon"`},
		{name: "describe needs a call", args: []string{"describe"}, wantCode: ExitUsage, wantErrOut: "accepts 1 arg(s)"},
		{name: "mcp wait bound", args: []string{"mcp", "--wait-timeout", "0s", nowhere}, wantCode: ExitUsage, wantErrOut: "--wait-timeout must be positive"},
		{name: "mcp session per client on stdio", args: []string{"mcp", "--session-per-client", nowhere}, wantCode: ExitUsage,
			wantErrOut: "--session-per-client needs --http and no --session"},
		{name: "mcp session per client and a session", args: []string{"mcp", "--session-per-client", "--session", "s", "--http", "127.0.0.1:0", nowhere},
			wantCode: ExitUsage, wantErrOut: "--session-per-client needs --http and no --session"},
		{name: "mcp takes no arguments", args: []string{"mcp", "extra"}, wantCode: ExitUsage, wantErrOut: "unknown command"},
		{name: "mcp without a cluster", args: []string{"mcp", nowhere}, wantCode: ExitFailure, wantErrOut: "error: reading the kubeconfig:"},
		{name: "no kubeconfig", args: []string{"get", nowhere}, wantCode: ExitFailure, wantErrOut: "error: reading the kubeconfig:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			streams := genericiooptions.IOStreams{In: strings.NewReader(tc.stdin), Out: &out, ErrOut: &errOut}
			code := Execute(context.Background(), tc.args, streams)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("stdout %q does not contain %q", out.String(), tc.wantOut)
			}
			if !strings.Contains(errOut.String(), tc.wantErrOut) {
				t.Errorf("stderr %q does not contain %q", errOut.String(), tc.wantErrOut)
			}
		})
	}
}

// TestCommandsListed keeps the list of subcommands in step with the help and the docs.
func TestCommandsListed(t *testing.T) {
	root := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	var names []string
	for _, c := range root.Commands() {
		names = append(names, c.Name())
	}
	for _, want := range []string{"approve", "call", "deny", "describe", "get", "logs", "tools", "version"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("subcommand %q missing from %v", want, names)
		}
	}
}
