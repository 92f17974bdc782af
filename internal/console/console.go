package console

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/tokenauth"
	"github.com/toolgate/toolgate/pkg/agentclient"
)

// AuthMode is how browsers sign in.
type AuthMode string

const (
	// AuthKubeconfig acts as Options.Client's identity for every browser that opened the
	// secret sign-in link (LoginURL).
	AuthKubeconfig AuthMode = "kubeconfig"
	// AuthToken acts as the identity of each browser's bearer token (TokenReview +
	// impersonation).
	AuthToken AuthMode = "token"
)

// Decider answers a call as the client's identity: the CLI's approve/deny path (checks,
// then the ToolCallApproval). Its error's text is shown to the user.
type Decider func(ctx context.Context, c *agentclient.Client, call *v1alpha1.ToolCall, d v1alpha1.ApprovalDecision, reason string) error

// Describer reads a call and what belongs to it (approval, Job, Pods, events), as the CLI's
// describe does; what the identity may not read is a note.
type Describer func(ctx context.Context, c *agentclient.Client, kube kubernetes.Interface, name string) (*CallView, error)

// Options configure a Server.
type Options struct {
	// Auth is how browsers sign in (AuthKubeconfig when "").
	Auth AuthMode
	// Client is the console's own identity: the one every page acts as under
	// AuthKubeconfig; its Namespace is the namespace shown when the identity may not list
	// calls across namespaces.
	Client *agentclient.Client
	// Config is Client's connection: the clientset for Pods and events, and under
	// AuthToken the reviewer of tokens and the base of impersonation.
	Config *rest.Config
	// Namespace, when set, is the only namespace shown; "" shows every namespace the
	// identity may list calls in.
	Namespace string
	// Audience a token must be for (tokenauth.DefaultAudience when ""), ImpersonateExtras
	// the user extras passed on (tokenauth.SAExtras when nil): AuthToken only.
	Audience          string
	ImpersonateExtras []string
	// SecureCookies marks the session cookie Secure (the console is served over HTTPS,
	// directly or behind a proxy).
	SecureCookies bool
	// Decide and Describe are the CLI's (internal/cli): required.
	Decide   Decider
	Describe Describer
	// Logger receives request errors; Discard when unset.
	Logger logr.Logger
}

// Server is the console's HTTP handler and its sessions.
type Server struct {
	opts     Options
	pages    map[string]*template.Template
	sessions *sessions
	handler  http.Handler
}

//go:embed assets
var assets embed.FS

// New builds the console for opts.
func New(opts Options) (*Server, error) {
	if opts.Client == nil || opts.Config == nil || opts.Decide == nil || opts.Describe == nil {
		return nil, errors.New("console: Options.Client, Config, Decide and Describe are required")
	}
	if opts.Auth == "" {
		opts.Auth = AuthKubeconfig
	}
	if opts.Audience == "" {
		opts.Audience = tokenauth.DefaultAudience
	}
	if opts.ImpersonateExtras == nil {
		opts.ImpersonateExtras = tokenauth.SAExtras
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	ss, err := newSessions(opts)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, pages: pages, sessions: ss}
	s.handler = s.routes()
	return s, nil
}

// Handler serves the console.
func (s *Server) Handler() http.Handler { return s.handler }

// LoginURL is the sign-in link for base (e.g. "http://127.0.0.1:8091") under
// AuthKubeconfig, else base's sign-in page.
func (s *Server) LoginURL(base string) string {
	if s.opts.Auth == AuthKubeconfig {
		return base + loginPath + "?secret=" + s.sessions.secret
	}
	return base + loginPath
}

func (s *Server) routes() http.Handler {
	static, _ := fs.Sub(assets, "assets/static") // a constant path of the embedded tree
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET "+loginPath, s.loginPage)
	mux.HandleFunc("POST "+loginPath, s.login)
	mux.Handle("POST /logout", s.signedIn(s.logout))
	mux.Handle("GET /{$}", s.signedIn(s.pendingPage))
	mux.Handle("GET /calls/{namespace}/{name}", s.signedIn(s.callPage))
	mux.Handle("POST /calls/{namespace}/{name}/decision", s.signedIn(s.decide))
	mux.Handle("GET /events", s.signedIn(s.events))
	return securityHeaders(http.NewCrossOriginProtection().Handler(mux))
}

// securityHeaders keep the pages to their own script and style, out of frames, and
// their URLs (which may carry the sign-in secret) out of other sites' Referer headers.
// Not no-referrer: under it a browser sends "Origin: null" with a form POST, and over
// plain HTTP beyond localhost (no Sec-Fetch-Site) the cross-origin check refuses that.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// Serve serves on l until ctx ends, over HTTPS when tlsConfig is set
// (tokenauth.KeyPair.TLSConfig).
func (s *Server) Serve(ctx context.Context, l net.Listener, tlsConfig *tls.Config) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	failed := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			srv.TLSConfig = tlsConfig
			failed <- srv.ServeTLS(l, "", "")
			return
		}
		failed <- srv.Serve(l)
	}()
	select {
	case err := <-failed:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return srv.Close() // event streams outlive a graceful shutdown
	}
	return nil
}

// randomToken is 130 random bits, URL-safe.
func randomToken() string { return rand.Text() }
