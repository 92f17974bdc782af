package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"k8s.io/client-go/rest"

	"github.com/toolgate/toolgate/internal/tokenauth"
)

// Defaults of HTTPOptions.
const (
	DefaultSessionIdle     = 10 * time.Minute
	DefaultMaxIdentities   = 256
	DefaultMaxCalls        = 16
	DefaultMaxParked       = 16
	DefaultMaxRequestBytes = 1 << 20
)

// shutdownGrace bounds an HTTP shutdown: open event streams are closed after it.
const shutdownGrace = 5 * time.Second

// metadataPath is where the protected resource metadata is served (RFC 9728 §3).
const metadataPath = "/.well-known/oauth-protected-resource"

// SAExtras are the user extras of a Kubernetes service-account token: the gateway passes
// these on when it acts as the token's identity (HTTPOptions.ImpersonateExtras' default).
var SAExtras = tokenauth.SAExtras

// HTTPOptions configure the authenticating HTTP server.
type HTTPOptions struct {
	// Addr is host:port to listen on.
	Addr string
	// Config is the gateway's own connection: it reviews tokens (create tokenreviews) and
	// impersonates each client (impersonate users, groups, uids, userextras).
	Config *rest.Config
	// Audience a client's token must be for (DefaultAudience when "").
	Audience string
	// ResourceURL is the gateway's public URL, the resource of its metadata; "" derives it
	// from each request (scheme and Host).
	ResourceURL string
	// AuthorizationServers are the issuers of the tokens it accepts (metadata only).
	AuthorizationServers []string
	// TLSCertFile and TLSKeyFile serve HTTPS (both or neither); they are re-read when they
	// change on disk (a rotated Secret).
	TLSCertFile, TLSKeyFile string
	// SessionIdle closes a session without a request for this long (DefaultSessionIdle).
	SessionIdle time.Duration
	// MaxIdentities, MaxCalls and MaxParked count users, not tokens: every token of one
	// ServiceAccount is one user (tokenauth's UserKey for an identity slot, the username
	// for the limits).
	// MaxIdentities bounds the users served at once (DefaultMaxIdentities).
	MaxIdentities int
	// MaxCalls bounds the tools/calls in flight per user (DefaultMaxCalls).
	MaxCalls int
	// MaxParked bounds the calls a user's tools/calls left awaiting approval
	// (DefaultMaxParked).
	MaxParked int
	// MaxRequestBytes bounds a request body (DefaultMaxRequestBytes).
	MaxRequestBytes int64
	// AllowedHosts, when set, are the only Host headers served (DNS-rebinding protection
	// beyond loopback, where the SDK checks it already); "host" or "host:port".
	AllowedHosts []string
	// AllowedOrigins are browser origins allowed besides the same origin (the MCP
	// inspector's, e.g. http://localhost:6274); any other Origin is refused.
	AllowedOrigins []string
	// ImpersonateExtras are the user extras passed on (SAExtras when nil).
	ImpersonateExtras []string
}

func (o *HTTPOptions) defaults() {
	if o.Audience == "" {
		o.Audience = DefaultAudience
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.MaxIdentities <= 0 {
		o.MaxIdentities = DefaultMaxIdentities
	}
	if o.MaxCalls <= 0 {
		o.MaxCalls = DefaultMaxCalls
	}
	if o.MaxParked <= 0 {
		o.MaxParked = DefaultMaxParked
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.ImpersonateExtras == nil {
		o.ImpersonateExtras = SAExtras
	}
}

// HTTPServer serves MCP over streamable HTTP to authenticated clients, each as itself.
type HTTPServer struct {
	opts    HTTPOptions
	base    Options
	tenants *tenants
	handler http.Handler
}

// NewHTTP returns the authenticating server for base's namespace, scope and settings
// (base.Client is the gateway's own identity and is not used for calls). Every request
// needs a bearer token the API server accepts for the audience (TokenReview); the
// gateway then lists, creates, watches and cancels calls as that identity
// (impersonation), in a Gateway of its own, until ctx ends.
func NewHTTP(ctx context.Context, base Options, opts HTTPOptions) (*HTTPServer, error) {
	if base.Client == nil || opts.Config == nil {
		return nil, errors.New("gateway: Options.Client and HTTPOptions.Config are required")
	}
	opts.defaults()
	if base.Logger.GetSink() == nil {
		base.Logger = logr.Discard()
	}
	base.MaxCalls, base.MaxParked = opts.MaxCalls, opts.MaxParked
	reviewer, err := newTokenReviewer(opts.Config, opts.Audience)
	if err != nil {
		return nil, err
	}
	s := &HTTPServer{opts: opts, base: base, tenants: &tenants{
		base: base, cfg: opts.Config, extras: opts.ImpersonateExtras, max: opts.MaxIdentities,
		idleAfter: opts.SessionIdle, ctx: ctx, now: time.Now, byKey: map[string]*tenant{}, limits: map[string]*limits{},
	}}
	go s.tenants.sweep(ctx)
	s.handler = s.buildHandler(reviewer)
	return s, nil
}

// Handler is the server's HTTP handler.
func (s *HTTPServer) Handler() http.Handler { return s.handler }

// Identities is the number of identities served now.
func (s *HTTPServer) Identities() int { return s.tenants.count() }

type gatewayKey struct{}

func (s *HTTPServer) buildHandler(reviewer *tokenReviewer) http.Handler {
	getServer := func(r *http.Request) *mcp.Server {
		g, _ := r.Context().Value(gatewayKey{}).(*Gateway)
		if g == nil {
			return nil
		}
		return g.server
	}
	stream := streamable(s.base.Logger, getServer, s.opts.SessionIdle)
	asCaller := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := identityOf(r.Context())
		g, err := s.tenants.get(r.Context(), id)
		switch {
		case errors.Is(err, errTooManyIdentities):
			w.Header().Set("Retry-After", "30")
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		case err != nil:
			s.base.Logger.Error(err, "Serving an identity", "user", id.Username)
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		if r.Method == http.MethodDelete {
			// The SDK ends a session once its requests have returned: cancel its calls
			// first. Only this identity's gateway is asked, so a session ID alone
			// cancels nothing of anyone else's.
			g.CancelSession(r.Header.Get(sessionHeader))
		}
		stream.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), gatewayKey{}, g)))
	})
	metadataURL := func(r *http.Request) string { return s.resource(r) + metadataPath }
	authed := requireToken(reviewer, metadataURL, s.base.Logger, rejectMalformed(asCaller, s.opts.MaxRequestBytes))
	cop := http.NewCrossOriginProtection()
	for _, o := range s.opts.AllowedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			s.base.Logger.Info("Ignoring an allowed origin", "origin", o, "reason", err.Error())
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc(metadataPath, func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource: s.resource(r), AuthorizationServers: s.opts.AuthorizationServers,
			BearerMethodsSupported: []string{"header"}, ResourceName: "toolgate MCP gateway",
		}).ServeHTTP(w, r)
	})
	mux.Handle("/", s.checkOrigin(cop.Handler(authed)))
	return s.checkHost(mux)
}

// resource is the gateway's resource URL: ResourceURL, else from the request.
func (s *HTTPServer) resource(r *http.Request) string {
	if s.opts.ResourceURL != "" {
		return strings.TrimSuffix(s.opts.ResourceURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// checkHost refuses a Host that is not allowed (when AllowedHosts is set): a page that
// rebinds its DNS name to the gateway's address still sends its own name as Host.
func (s *HTTPServer) checkHost(next http.Handler) http.Handler {
	if len(s.opts.AllowedHosts) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if !slices.Contains(s.opts.AllowedHosts, r.Host) && !slices.Contains(s.opts.AllowedHosts, host) {
			http.Error(w, "forbidden: host "+r.Host+" is not served", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkOrigin refuses a request whose Origin is neither the gateway's own nor allowed,
// whatever the method (the MCP transport requires servers to validate Origin).
func (s *HTTPServer) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && origin != "null" && !slices.Contains(s.opts.AllowedOrigins, origin) {
			if u := strings.TrimPrefix(strings.TrimPrefix(origin, "https://"), "http://"); u != r.Host {
				http.Error(w, "forbidden: origin "+origin+" is not allowed", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Serve listens on opts.Addr until ctx ends; it returns once the calls in flight have
// been cancelled.
func (s *HTTPServer) Serve(ctx context.Context) error {
	srv := &http.Server{
		Addr:              s.opts.Addr,
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		// Requests end with the gateway: their tools/calls are cancelled.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	if s.opts.TLSCertFile != "" {
		kp, err := tokenauth.NewKeyPair(s.opts.TLSCertFile, s.opts.TLSKeyFile)
		if err != nil {
			return err
		}
		srv.TLSConfig = kp.TLSConfig()
	}
	// Read before serving: ListenAndServe writes srv.TLSConfig (HTTP/2 set-up).
	useTLS := srv.TLSConfig != nil
	failed := make(chan error, 1)
	go func() {
		if useTLS {
			failed <- srv.ListenAndServeTLS("", "")
			return
		}
		failed <- srv.ListenAndServe()
	}()
	s.base.Logger.Info("Serving MCP over streamable HTTP", "address", s.opts.Addr, "tls", useTLS,
		"audience", s.opts.Audience)
	select {
	case err := <-failed:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	defer s.tenants.waitCalls()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return srv.Close() // open event streams outlive a graceful shutdown
	}
	return nil
}
