package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/console"
	"github.com/toolgate/toolgate/internal/tokenauth"
	"github.com/toolgate/toolgate/pkg/agentclient"
	"github.com/toolgate/toolgate/pkg/display"
)

type consoleOptions struct {
	f               *Factory
	address         string
	port            int
	auth            string
	audience        string
	extras          []string
	tlsCert, tlsKey string
	remote, secure  bool
}

func newConsoleCommand(f *Factory) *cobra.Command {
	o := &consoleOptions{f: f}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the approval console: calls awaiting approval, Approve / Deny, each call's stages, live",
		Long: "console serves a web page of the calls awaiting approval that you may see (every namespace\n" +
			"you may list calls in, or -n), each as its card with Approve and Deny, and a page per call\n" +
			"with its stages as a timeline, its result, attempts, Pods and events, updated live.\n\n" +
			"By default it acts as your kubeconfig's identity, as `kubectl proxy` does, on loopback only:\n" +
			"open the sign-in link it prints (a secret, so that no other local user acts as you).\n\n" +
			"With --auth token (deployed) each browser signs in with a bearer token the API server\n" +
			"accepts for --audience (TokenReview) and the console acts as that identity (impersonation),\n" +
			"as `toolgate mcp --http` does; beyond loopback it needs TLS or --allow-remote.",
		Example: "  toolgate console -n toolgate-demo\n" +
			"  toolgate console --port 0                 # any free port\n" +
			"  toolgate console --auth token --address 0.0.0.0 --port 8443 --tls-cert-file tls.crt --tls-key-file tls.key",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.address, "address", "127.0.0.1", "the address to listen on")
	fl.IntVarP(&o.port, "port", "p", 8091, "the port to listen on (0: any free port)")
	fl.StringVar(&o.auth, "auth", string(console.AuthKubeconfig),
		"how browsers sign in: kubeconfig (act as you, loopback only) or token (act as each browser's bearer token)")
	fl.StringVar(&o.audience, "audience", tokenauth.DefaultAudience, "--auth token: the audience a token must be for")
	fl.StringSliceVar(&o.extras, "impersonate-extras", tokenauth.SAExtras, "--auth token: user extras passed on when acting as a user")
	fl.StringVar(&o.tlsCert, "tls-cert-file", "", "serve HTTPS with this certificate (re-read when it changes)")
	fl.StringVar(&o.tlsKey, "tls-key-file", "", "the key of --tls-cert-file")
	fl.BoolVar(&o.remote, "allow-remote", false, "--auth token: listen beyond loopback without TLS (behind a TLS-terminating proxy only)")
	fl.BoolVar(&o.secure, "secure-cookies", false, "mark the session cookie Secure (served over HTTPS by a proxy; implied by --tls-cert-file)")
	return cmd
}

func (o *consoleOptions) run(ctx context.Context) error {
	auth := console.AuthMode(o.auth)
	if err := o.check(auth); err != nil {
		return err
	}
	c, err := o.f.AgentClient(ctx)
	if err != nil {
		return err
	}
	cfg, err := o.f.RESTConfig()
	if err != nil {
		return err
	}
	srv, err := console.New(console.Options{
		Auth: auth, Client: c, Config: cfg, Namespace: *o.f.Flags.Namespace,
		Audience: o.audience, ImpersonateExtras: o.extras, SecureCookies: o.secure || o.tlsCert != "",
		Decide: consoleDecide, Describe: consoleDescribe,
	})
	if err != nil {
		return err
	}
	var tlsConfig *tls.Config
	if o.tlsCert != "" {
		kp, err := tokenauth.NewKeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return Exit(ExitFailure, fmt.Errorf("reading the TLS key pair: %w", err))
		}
		tlsConfig = kp.TLSConfig()
	}
	l, err := net.Listen("tcp", net.JoinHostPort(o.address, strconv.Itoa(o.port)))
	if err != nil {
		return Exit(ExitFailure, err)
	}
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	base := scheme + "://" + l.Addr().String()
	fprintf(o.f.IO.Out, "Serving the toolgate console at %s/ as %s (%s).\nSign in: %s\n", base, display.Line(c.Identity), auth, srv.LoginURL(base))
	return srv.Serve(ctx, l, tlsConfig)
}

// check refuses what would let others act as someone: the kubeconfig's identity served
// beyond loopback, or tokens over the network in clear text.
func (o *consoleOptions) check(auth console.AuthMode) error {
	switch {
	case auth != console.AuthKubeconfig && auth != console.AuthToken:
		return Usagef("--auth must be kubeconfig or token, not %q", o.auth)
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return Usagef("--tls-cert-file and --tls-key-file go together")
	case o.port < 0 || o.port > 65535:
		return Usagef("--port %d is not a port", o.port)
	case isLoopback(o.address):
		return nil
	case auth == console.AuthKubeconfig:
		return Usagef("--address %s is beyond this machine: with --auth kubeconfig anyone who reaches it acts as you; "+
			"listen on loopback, or deploy with --auth token", o.address)
	case o.tlsCert == "" && !o.remote:
		return Usagef("--address %s is beyond this machine without TLS: browsers' tokens would travel in clear text. "+
			"Serve TLS (--tls-cert-file, --tls-key-file), or pass --allow-remote behind a TLS-terminating proxy", o.address)
	}
	return nil
}

// consoleDecide is approve / deny for the console: the same checks (not awaiting, a
// self-approval, a digest that is not the arguments') and the same write as the commands.
func consoleDecide(ctx context.Context, c *agentclient.Client, call *v1alpha1.ToolCall, d v1alpha1.ApprovalDecision, reason string) error {
	if len(reason) > 1024 {
		return fmt.Errorf("the reason is %d characters long; at most 1024", len(reason))
	}
	o := &decideOptions{decision: d, reason: reason}
	err := o.check(call, c.Identity)
	if err == nil {
		err = o.write(ctx, c, call)
	}
	var exit *ExitError
	if errors.As(err, &exit) && exit.Code == ExitForbidden {
		return console.Forbidden{Err: err}
	}
	return err
}

// consoleDescribe is what describe reads, as the console's rows.
func consoleDescribe(ctx context.Context, c *agentclient.Client, kube kubernetes.Interface, name string) (*console.CallView, error) {
	v, err := gatherDescribe(ctx, c, kube, name)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	cv := &console.CallView{Call: v.Call, Approval: v.Approval, Notes: v.Notes,
		Timeline: timelineRows(v.Call.CreationTimestamp.Time, v.Call.Status.Conditions),
		Attempts: attemptRows(v.Call.Status.Attempts), Pods: podRows(v.Pods), Events: eventRows(v.Events, now)}
	if v.Job != nil {
		cv.JobState = jobState(v.Job)
	}
	return cv, nil
}
