package cli

import (
	"net"
	"net/netip"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/internal/gateway"
	"github.com/toolgate/toolgate/pkg/display"
)

type mcpOptions struct {
	f                *Factory
	http             gateway.HTTPOptions
	remote           bool
	scope            string
	session          string
	sessionPerClient bool
	wait             time.Duration
	verbosity        int
}

func newMCPCommand(f *Factory) *cobra.Command {
	o := &mcpOptions{f: f}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the tools of a namespace (or --scope) as an MCP server, on stdio or --http",
		Long: "mcp is a Model Context Protocol gateway: tools/list returns the tools the scope sees,\n" +
			"and every tools/call becomes a ToolCall whose frozen result is returned as the MCP\n" +
			"result. Without --http it speaks on stdin/stdout as you (the kubeconfig's identity),\n" +
			"for an agent runtime that starts it; logs go to stderr.\n\n" +
			"With --http every request needs a bearer token the API server accepts for --audience\n" +
			"(TokenReview; e.g. kubectl create token SA --audience toolgate), and the gateway acts\n" +
			"as that token's identity (impersonation): your kubeconfig identity needs create on\n" +
			"tokenreviews and impersonate on users, groups, uids and userextras. Without TLS\n" +
			"(--tls-cert-file, --tls-key-file) it listens on loopback only, unless --allow-remote.",
		Example: "  toolgate mcp -n toolgate-demo --scope demo\n" +
			"  toolgate mcp -n toolgate-demo --scope demo --http 127.0.0.1:8090\n" +
			"  toolgate mcp -n agents --http :8443 --tls-cert-file tls.crt --tls-key-file tls.key",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.http.Addr, "http", "", "serve streamable HTTP on this address (host:port) instead of stdio")
	fl.BoolVar(&o.remote, "allow-remote", false,
		"let --http listen beyond loopback without TLS (bearer tokens then travel in clear text: a trusted network only)")
	fl.StringVar(&o.http.Audience, "audience", gateway.DefaultAudience, "the audience a client's token must be for")
	fl.StringVar(&o.http.ResourceURL, "resource-url", "", "the gateway's public URL in its OAuth metadata (default: from each request)")
	fl.StringSliceVar(&o.http.AuthorizationServers, "authorization-server", nil, "issuer of the accepted tokens, for the metadata (repeatable)")
	fl.StringVar(&o.http.TLSCertFile, "tls-cert-file", "", "serve HTTPS with this certificate (re-read when it changes)")
	fl.StringVar(&o.http.TLSKeyFile, "tls-key-file", "", "the key of --tls-cert-file")
	fl.DurationVar(&o.http.SessionIdle, "session-idle-timeout", gateway.DefaultSessionIdle, "close an HTTP session without a request for this long")
	fl.IntVar(&o.http.MaxIdentities, "max-identities", gateway.DefaultMaxIdentities, "users served at once (every token of one ServiceAccount is one user)")
	fl.IntVar(&o.http.MaxCalls, "max-calls-per-identity", gateway.DefaultMaxCalls, "tools/calls in flight at once per user, whichever of their tokens they use")
	fl.IntVar(&o.http.MaxParked, "max-parked-per-identity", gateway.DefaultMaxParked,
		"calls a user's tools/calls may leave awaiting approval at once; past it a tools/call is refused until a person answers one")
	fl.Int64Var(&o.http.MaxRequestBytes, "max-request-bytes", gateway.DefaultMaxRequestBytes, "the largest request body")
	fl.StringSliceVar(&o.http.AllowedHosts, "allowed-hosts", nil, "the only Host headers served (DNS-rebinding protection; default: any)")
	fl.StringSliceVar(&o.http.AllowedOrigins, "allowed-origins", nil, "browser origins allowed besides the gateway's own (e.g. http://localhost:6274)")
	fl.StringSliceVar(&o.http.ImpersonateExtras, "impersonate-extras", gateway.SAExtras, "user extras passed on when acting as a client")
	fl.StringVar(&o.scope, "scope", "", "the ToolScope whose tools are served (default: the namespace layer)")
	fl.StringVar(&o.session, "session", "", "spec.session of every call (orders calls of unsafe tools)")
	fl.BoolVar(&o.sessionPerClient, "session-per-client", false,
		"with --http: each MCP session (or _meta toolgate.dev/session key) of a client is its own spec.session, so its own workspace")
	fl.DurationVar(&o.wait, "wait-timeout", gateway.DefaultWaitBound,
		"how long a tools/call waits for its result before answering that the call is still running")
	fl.IntVarP(&o.verbosity, "verbosity", "v", 0, "log verbosity on stderr (1: the MCP SDK's messages too)")
	return cmd
}

func (o *mcpOptions) run(cmd *cobra.Command) error {
	if o.wait <= 0 {
		return Usagef("--wait-timeout must be positive, not %s", o.wait)
	}
	if o.sessionPerClient && (o.session != "" || o.http.Addr == "") {
		return Usagef("--session-per-client needs --http and no --session: on stdio the process is the session (--session)")
	}
	if (o.http.TLSCertFile == "") != (o.http.TLSKeyFile == "") {
		return Usagef("--tls-cert-file and --tls-key-file go together")
	}
	if err := checkListenAddress(o.http.Addr, o.remote || o.http.TLSCertFile != ""); err != nil {
		return err
	}
	c, err := o.f.AgentClient(cmd.Context())
	if err != nil {
		return err
	}
	base := gateway.Options{Client: c, Scope: o.scope, Session: o.session, SessionPerClient: o.sessionPerClient, WaitBound: o.wait, Logger: o.logger()}
	if o.http.Addr == "" {
		return gateway.Serve(cmd.Context(), base)
	}
	if o.http.Config, err = o.f.RESTConfig(); err != nil {
		return err
	}
	return gateway.ServeHTTP(cmd.Context(), base, o.http)
}

// logger writes to stderr: on stdio, stdout carries the protocol. A log line may quote
// what an MCP client sent: shown as one line (display.Line).
func (o *mcpOptions) logger() logr.Logger {
	errOut := o.f.IO.ErrOut
	return funcr.New(func(prefix, args string) {
		if prefix != "" {
			fprintf(errOut, "%s %s: %s\n", time.Now().Format(time.RFC3339), display.Line(prefix), display.Line(args))
			return
		}
		fprintf(errOut, "%s %s\n", time.Now().Format(time.RFC3339), display.Line(args))
	}, funcr.Options{Verbosity: o.verbosity})
}

// checkListenAddress refuses an --http address reachable from other machines without
// TLS unless --allow-remote says so: clients send bearer tokens, which must not cross a
// network in clear text. Loopback is 127.0.0.0/8, ::1 and the name localhost; an empty
// host (":8090") is every interface, and other names are not resolved (what they resolve
// to can change) — both count as remote.
func checkListenAddress(addr string, allowRemote bool) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return Usagef("--http %q is not host:port: %v", addr, err)
	}
	if allowRemote || isLoopback(host) {
		return nil
	}
	where := "host " + host
	if host == "" {
		where = "every interface"
	}
	return Usagef("--http %s listens on %s, beyond this machine, without TLS: clients' bearer tokens would "+
		"travel in clear text. Serve TLS (--tls-cert-file, --tls-key-file), listen on loopback (e.g. 127.0.0.1:PORT), "+
		"or pass --allow-remote if the network is trusted (inside a cluster)", addr, where)
}

// isLoopback reports whether host is the name localhost or a loopback address; other
// names are not resolved (what they resolve to can change).
func isLoopback(host string) bool {
	ip, err := netip.ParseAddr(host)
	return host == "localhost" || err == nil && ip.Unmap().IsLoopback()
}
