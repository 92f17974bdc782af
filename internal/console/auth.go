package console

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/toolgate/toolgate/internal/tokenauth"
	"github.com/toolgate/toolgate/pkg/agentclient"
)

const (
	loginPath  = "/login"
	cookieName = "toolgate-console"
	csrfField  = "csrf"
	csrfHeader = "X-CSRF-Token"
	// maxUsers bounds the identities whose clients are kept (AuthToken).
	maxUsers = 256
	// maxBrowsers bounds the browser sessions kept (AuthKubeconfig); past it the oldest
	// is signed out.
	maxBrowsers = 1024
	// browserLifetime is how long a browser session lasts (AuthKubeconfig).
	browserLifetime = 12 * time.Hour
)

// user is a signed-in identity's clients. Its agentclient's Namespace is where the console
// looks when the identity may not list calls across namespaces.
type user struct {
	ac   *agentclient.Client
	kube kubernetes.Interface
}

// request is who made an HTTP request and the CSRF token of their session.
type request struct {
	*user
	csrf string
}

// errSignIn is a request without a credential the console accepts.
var errSignIn = errors.New("sign in first")

// sessions authenticates requests: a browser session the sign-in link opened
// (AuthKubeconfig) or a bearer token (AuthToken), from the session cookie or (tokens) an
// Authorization header.
type sessions struct {
	opts     Options
	secret   string
	csrfKey  []byte
	local    *user
	reviewer *tokenauth.Reviewer

	mu    sync.Mutex
	users map[string]*user // by tokenauth.Identity.Key
	// browsers are the sessions the sign-in link opened (AuthKubeconfig), by the SHA-256 of
	// their cookie, with when they end. The cookie is never the sign-in secret itself: a
	// browser that signs out, or whose cookie leaked, is signed out for good, while the link
	// still signs in others.
	browsers map[[sha256.Size]byte]time.Time
	now      func() time.Time
}

func newSessions(opts Options) (*sessions, error) {
	ss := &sessions{opts: opts, secret: randomToken(), csrfKey: []byte(randomToken()), users: map[string]*user{},
		browsers: map[[sha256.Size]byte]time.Time{}, now: time.Now}
	if opts.Auth == AuthKubeconfig {
		kube, err := kubernetes.NewForConfig(opts.Config)
		if err != nil {
			return nil, err
		}
		ss.local = &user{ac: opts.Client, kube: kube}
		return ss, nil
	}
	r, err := tokenauth.NewReviewer(opts.Config, opts.Audience)
	if err != nil {
		return nil, err
	}
	ss.reviewer = r
	return ss, nil
}

// credential is the request's bearer token (AuthToken), else its session cookie.
func (ss *sessions) credential(r *http.Request) string {
	if ss.opts.Auth == AuthToken {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			return strings.TrimSpace(tok)
		}
	}
	if c, err := r.Cookie(cookieName); err == nil {
		return c.Value
	}
	return ""
}

// authenticate returns who r comes from.
func (ss *sessions) authenticate(r *http.Request) (*request, error) {
	cred := ss.credential(r)
	if cred == "" {
		return nil, errSignIn
	}
	var u *user
	if ss.opts.Auth == AuthKubeconfig {
		if !ss.browserSignedIn(cred) {
			return nil, errSignIn
		}
		u = ss.local
	} else {
		var err error
		if u, err = ss.tokenUser(r.Context(), cred); err != nil {
			return nil, err
		}
	}
	return &request{user: u, csrf: ss.csrfToken(cred)}, nil
}

// openBrowser starts a browser session and returns its cookie value.
func (ss *sessions) openBrowser() string {
	id := randomToken()
	now := ss.now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, until := range ss.browsers {
		if !now.Before(until) {
			delete(ss.browsers, k)
		}
	}
	if len(ss.browsers) >= maxBrowsers {
		var oldest [sha256.Size]byte
		first := true
		for k, until := range ss.browsers {
			if first || until.Before(ss.browsers[oldest]) {
				oldest, first = k, false
			}
		}
		delete(ss.browsers, oldest)
	}
	ss.browsers[sha256.Sum256([]byte(id))] = now.Add(browserLifetime)
	return id
}

// browserSignedIn reports whether cookie is a live browser session.
func (ss *sessions) browserSignedIn(cookie string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	until, ok := ss.browsers[sha256.Sum256([]byte(cookie))]
	return ok && ss.now().Before(until)
}

// closeBrowser ends the browser session of cookie.
func (ss *sessions) closeBrowser(cookie string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.browsers, sha256.Sum256([]byte(cookie)))
}

// tokenUser is the user a token names, with clients impersonating it.
func (ss *sessions) tokenUser(ctx context.Context, token string) (*user, error) {
	id, _, err := ss.reviewer.Review(ctx, token)
	if errors.Is(err, tokenauth.ErrInvalidToken) {
		return nil, fmt.Errorf("%w: %w", errSignIn, err)
	}
	if err != nil {
		return nil, err
	}
	key := id.Key()
	ss.mu.Lock()
	u := ss.users[key]
	ss.mu.Unlock()
	if u != nil {
		return u, nil
	}
	cfg := id.Impersonate(ss.opts.Config, ss.opts.ImpersonateExtras)
	ac, err := agentclient.New(ctx, cfg, ss.homeNamespace(id.Username))
	if err != nil {
		return nil, fmt.Errorf("acting as %s: %w", id.Username, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	u = &user{ac: ac, kube: kube}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.users) >= maxUsers {
		for k := range ss.users { // any one: a client is cheap to make again
			delete(ss.users, k)
			break
		}
	}
	ss.users[key] = u
	return u, nil
}

// homeNamespace is where a token's identity is looked for first: a service account's own
// namespace, else the console's.
func (ss *sessions) homeNamespace(username string) string {
	if rest, ok := strings.CutPrefix(username, "system:serviceaccount:"); ok {
		if ns, _, ok := strings.Cut(rest, ":"); ok {
			return ns
		}
	}
	return ss.opts.Client.Namespace
}

// csrfToken binds a CSRF token to the session's credential: a page of another origin can
// neither read it nor derive it.
func (ss *sessions) csrfToken(cred string) string {
	m := hmac.New(sha256.New, ss.csrfKey)
	m.Write([]byte(cred))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF accepts a request that carries the session's CSRF token in the form or the
// X-CSRF-Token header.
func checkCSRF(r *http.Request, want string) bool {
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	return got != "" && hmac.Equal([]byte(got), []byte(want))
}

// setCookie starts a session carrying cred until expires (zero: the browser session).
func (ss *sessions) setCookie(w http.ResponseWriter, cred string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: cred, Path: "/", Expires: expires,
		HttpOnly: true, Secure: ss.opts.SecureCookies, SameSite: http.SameSiteStrictMode})
}

func (ss *sessions) clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: ss.opts.SecureCookies, SameSite: http.SameSiteStrictMode})
}

// signedIn serves h to a signed-in user only; a POST must carry the session's CSRF token.
// A page request without a session goes to the sign-in page; anything else is a 401.
func (s *Server) signedIn(h func(http.ResponseWriter, *http.Request, *request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := s.sessions.authenticate(r)
		switch {
		case errors.Is(err, errSignIn) && r.Method == http.MethodGet && r.URL.Path != "/events":
			http.Redirect(w, r, loginPath, http.StatusSeeOther)
			return
		case errors.Is(err, errSignIn):
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		case err != nil:
			s.opts.Logger.Error(err, "Authenticating a request")
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
			if !checkCSRF(r, req.csrf) {
				http.Error(w, "forbidden: missing or wrong CSRF token (reload the page)", http.StatusForbidden)
				return
			}
		}
		h(w, r, req)
	})
}

// loginPage signs a browser in with the secret link (AuthKubeconfig), else shows the form
// to paste a token into.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.opts.Auth == AuthKubeconfig {
		secret := r.URL.Query().Get("secret")
		if secret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(s.sessions.secret)) == 1 {
			s.sessions.setCookie(w, s.sessions.openBrowser(), time.Time{})
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
	}
	s.render(w, http.StatusOK, "login", page{Title: "Sign in", Login: &loginView{Token: s.opts.Auth == AuthToken}})
}

// login takes a pasted token (AuthToken): reviewed, it becomes the session's cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.opts.Auth != AuthToken {
		http.Error(w, "sign in with the link toolgate console printed", http.StatusNotFound)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	token := strings.TrimSpace(r.PostFormValue("token"))
	fail := func(status int, msg string) {
		s.render(w, status, "login", page{Title: "Sign in", Login: &loginView{Token: true, Error: msg}})
	}
	if token == "" {
		fail(http.StatusBadRequest, "paste a token")
		return
	}
	_, expires, err := s.sessions.reviewer.Review(r.Context(), token)
	switch {
	case errors.Is(err, tokenauth.ErrInvalidToken):
		fail(http.StatusUnauthorized, err.Error())
		return
	case err != nil:
		fail(http.StatusBadGateway, err.Error())
		return
	}
	s.sessions.setCookie(w, token, expires)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the browser's session: under AuthKubeconfig its cookie is refused from now on,
// wherever it was copied to; a token (AuthToken) is the cluster's credential and stays valid
// until it expires, only the browser forgets it.
func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ *request) {
	if s.opts.Auth == AuthKubeconfig {
		if c, err := r.Cookie(cookieName); err == nil {
			s.sessions.closeBrowser(c.Value)
		}
	}
	s.sessions.clearCookie(w)
	http.Redirect(w, r, loginPath, http.StatusSeeOther)
}
