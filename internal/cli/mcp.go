package cli

import (
	"net"
	"net/netip"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/internal/gateway"
)

type mcpOptions struct {
	f         *Factory
	http      string
	remote    bool
	scope     string
	session   string
	wait      time.Duration
	verbosity int
}

func newMCPCommand(f *Factory) *cobra.Command {
	o := &mcpOptions{f: f}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the tools of a namespace (or --scope) as an MCP server, on stdio or --http",
		Long: "mcp is a Model Context Protocol gateway: tools/list returns the tools the scope sees,\n" +
			"and every tools/call becomes a ToolCall made as you (the kubeconfig's identity), whose\n" +
			"frozen result is returned as the MCP result. Without --http it speaks on stdin/stdout\n" +
			"(for an agent runtime that starts it); logs go to stderr.\n\n" +
			"The gateway does not authenticate HTTP clients: each acts as your identity. --http\n" +
			"therefore listens on loopback only (127.0.0.1, [::1], localhost) unless --allow-remote\n" +
			"says the address is meant to be reachable (behind authentication of your own).",
		Example: "  toolgate mcp -n toolgate-demo --scope demo\n" +
			"  toolgate mcp -n toolgate-demo --scope demo --http 127.0.0.1:8090",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd)
		},
	}
	cmd.Flags().StringVar(&o.http, "http", "", "serve streamable HTTP on this address (host:port) instead of stdio")
	cmd.Flags().BoolVar(&o.remote, "allow-remote", false,
		"let --http listen on a non-loopback address (its clients are not authenticated: put authentication in front)")
	cmd.Flags().StringVar(&o.scope, "scope", "", "the ToolScope whose tools are served (default: the namespace layer)")
	cmd.Flags().StringVar(&o.session, "session", "", "spec.session of every call (orders calls of unsafe tools)")
	cmd.Flags().DurationVar(&o.wait, "wait-timeout", gateway.DefaultWaitBound,
		"how long a tools/call waits for its result before answering that the call is still running")
	cmd.Flags().IntVarP(&o.verbosity, "verbosity", "v", 0, "log verbosity on stderr (1: the MCP SDK's messages too)")
	return cmd
}

func (o *mcpOptions) run(cmd *cobra.Command) error {
	if o.wait <= 0 {
		return Usagef("--wait-timeout must be positive, not %s", o.wait)
	}
	if err := checkListenAddress(o.http, o.remote); err != nil {
		return err
	}
	c, err := o.f.AgentClient(cmd.Context())
	if err != nil {
		return err
	}
	return gateway.Serve(cmd.Context(), gateway.Options{
		Client:    c,
		Scope:     o.scope,
		Session:   o.session,
		WaitBound: o.wait,
		Logger:    o.logger(),
	}, o.http)
}

// logger writes to stderr: on stdio, stdout carries the protocol.
func (o *mcpOptions) logger() logr.Logger {
	errOut := o.f.IO.ErrOut
	return funcr.New(func(prefix, args string) {
		if prefix != "" {
			fprintf(errOut, "%s %s: %s\n", time.Now().Format(time.RFC3339), prefix, args)
			return
		}
		fprintf(errOut, "%s %s\n", time.Now().Format(time.RFC3339), args)
	}, funcr.Options{Verbosity: o.verbosity})
}

// checkListenAddress refuses an --http address reachable from other machines unless
// --allow-remote says so: until the gateway authenticates its clients, anyone who reaches
// it acts as the kubeconfig's identity. Loopback is 127.0.0.0/8, ::1 and the name localhost;
// an empty host (":8090") is every interface, and other names are not resolved (what they
// resolve to can change) — both count as remote.
func checkListenAddress(addr string, allowRemote bool) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return Usagef("--http %q is not host:port: %v", addr, err)
	}
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return nil
	}
	where := "host " + host
	if host == "" {
		where = "every interface"
	}
	return Usagef("--http %s listens on %s, beyond this machine, and the gateway does not authenticate "+
		"its HTTP clients (each would act as your identity): listen on loopback (e.g. 127.0.0.1:PORT), "+
		"or pass --allow-remote if the address is meant to be reachable and authentication is in front of it", addr, where)
}
