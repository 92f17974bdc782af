package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// toolgate mcp --http listens on loopback only unless TLS or --allow-remote says
// otherwise: clients send bearer tokens, which must not travel in clear text. An address that passes the check goes on to read the kubeconfig (which points
// nowhere here: exit 1), one that does not is a usage error (exit 3) before any connection.
func TestMCPHTTPRefusesRemoteAddresses(t *testing.T) {
	nowhere := "--kubeconfig=" + filepath.Join(t.TempDir(), "missing")
	const refused = "beyond this machine, without TLS: clients' bearer tokens would travel in clear text"
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantErrOut string
	}{
		{name: "IPv4 loopback", args: []string{"--http", "127.0.0.1:8090"}, wantCode: ExitFailure, wantErrOut: "reading the kubeconfig"},
		{name: "other IPv4 loopback", args: []string{"--http", "127.1.2.3:8090"}, wantCode: ExitFailure, wantErrOut: "reading the kubeconfig"},
		{name: "IPv6 loopback", args: []string{"--http", "[::1]:8090"}, wantCode: ExitFailure, wantErrOut: "reading the kubeconfig"},
		{name: "IPv4-mapped loopback", args: []string{"--http", "[::ffff:127.0.0.1]:8090"}, wantCode: ExitFailure, wantErrOut: "reading the kubeconfig"},
		{name: "localhost", args: []string{"--http", "localhost:8090"}, wantCode: ExitFailure, wantErrOut: "reading the kubeconfig"},
		{name: "every interface", args: []string{"--http", ":8090"}, wantCode: ExitUsage,
			wantErrOut: "error: --http :8090 listens on every interface, " + refused},
		{name: "unspecified IPv4", args: []string{"--http", "0.0.0.0:8090"}, wantCode: ExitUsage,
			wantErrOut: "error: --http 0.0.0.0:8090 listens on host 0.0.0.0, " + refused},
		{name: "unspecified IPv6", args: []string{"--http", "[::]:8090"}, wantCode: ExitUsage, wantErrOut: refused},
		{name: "a routable address", args: []string{"--http", "10.1.2.3:8090"}, wantCode: ExitUsage, wantErrOut: "--allow-remote"},
		{name: "a host name", args: []string{"--http", "gateway.example:8090"}, wantCode: ExitUsage, wantErrOut: refused},
		{name: "no port", args: []string{"--http", "127.0.0.1"}, wantCode: ExitUsage, wantErrOut: `--http "127.0.0.1" is not host:port`},
		{name: "remote, allowed", args: []string{"--http", "0.0.0.0:8090", "--allow-remote"}, wantCode: ExitFailure, wantErrOut: "reading the kubeconfig"},
		{name: "every interface, allowed", args: []string{"--http", ":8090", "--allow-remote"}, wantCode: ExitFailure, wantErrOut: "reading the kubeconfig"},
		{name: "remote with TLS", args: []string{"--http", ":8443", "--tls-cert-file", "c", "--tls-key-file", "k"}, wantCode: ExitFailure, wantErrOut: "reading the kubeconfig"},
		{name: "a certificate without its key", args: []string{"--http", ":8443", "--tls-cert-file", "c"}, wantCode: ExitUsage, wantErrOut: "go together"},
		{name: "stdio needs no check", args: nil, wantCode: ExitFailure, wantErrOut: "reading the kubeconfig"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
			code := Execute(context.Background(), append(append([]string{"mcp"}, tc.args...), nowhere), streams)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, tc.wantCode, errOut.String())
			}
			if !strings.Contains(errOut.String(), tc.wantErrOut) {
				t.Errorf("stderr %q does not contain %q", errOut.String(), tc.wantErrOut)
			}
		})
	}
}

// controller-runtime's log goes to the command's stderr: without a logger it would print a
// stack trace there once the process is 30 s old (the gateway's first client for a new user).
func TestControllerRuntimeLogsToStderr(t *testing.T) {
	var errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut}
	Execute(context.Background(), []string{"mcp", "--kubeconfig=" + filepath.Join(t.TempDir(), "missing")}, streams)
	ctrllog.Log.WithName("client").Info("a warning from a client", "kind", "ToolCall")
	if got := errOut.String(); !strings.Contains(got, `controller-runtime/client: "level"=0 "msg"="a warning from a client" "kind"="ToolCall"`) {
		t.Errorf("stderr %q does not carry controller-runtime's log line", got)
	}
}
