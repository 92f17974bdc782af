package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"k8s.io/client-go/rest"

	"github.com/toolgate/toolgate/internal/tokenauth"
)

// DefaultAudience is the audience a client's token must be for (kubectl create token
// --audience toolgate): a token minted for the API server or another service is refused,
// so that no token meant for someone else passes through the gateway.
const DefaultAudience = tokenauth.DefaultAudience

// Identity is who a client's token says it is, as the API server's TokenReview reports
// it: the gateway acts as exactly this user (impersonation).
type Identity = tokenauth.Identity

// tokenReviewer adapts tokenauth's cached TokenReview to the MCP SDK's bearer-token
// middleware.
type tokenReviewer struct{ *tokenauth.Reviewer }

func newTokenReviewer(cfg *rest.Config, audience string) (*tokenReviewer, error) {
	r, err := tokenauth.NewReviewer(cfg, audience)
	if err != nil {
		return nil, err
	}
	return &tokenReviewer{r}, nil
}

// identify reviews a token: the TokenInfo carries the identity (UserID is its UserKey,
// which the SDK binds each session to: a client that renews its token keeps its session).
// A refused token's error wraps tokenauth.ErrInvalidToken.
func (r *tokenReviewer) identify(ctx context.Context, token string) (*auth.TokenInfo, error) {
	id, expires, err := r.Review(ctx, token)
	if err != nil {
		return nil, err
	}
	if !expires.IsZero() && !time.Now().Before(expires) {
		return nil, fmt.Errorf("%w: the token has expired", tokenauth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: id.UserKey(), Expiration: expires, Extra: map[string]any{identityKey: id}}, nil
}

// requireToken lets through only requests whose bearer token the API server accepts, and
// answers the others as RFC 6750 §3 has it: 401 with a Bearer challenge naming the resource
// metadata (RFC 9728), plus error="invalid_token" and a description when a token was sent
// and refused (no error code when none was sent, §3.1). A request that passes goes on
// through the SDK's bearer middleware, given the answer, which puts the TokenInfo where the
// SDK's transport binds sessions to it.
func requireToken(r *tokenReviewer, metadataURL func(*http.Request) string, log logr.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		challenge := fmt.Sprintf("Bearer resource_metadata=%q", metadataURL(req))
		token, ok := bearerToken(req)
		if !ok {
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, "no bearer token: send Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		ti, err := r.identify(req.Context(), token)
		switch {
		case errors.Is(err, tokenauth.ErrInvalidToken):
			w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_token", error_description="`+description(err.Error())+`"`)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		case err != nil:
			log.Error(err, "Reviewing a client's token")
			http.Error(w, "the token could not be reviewed (the API server did not answer): try again", http.StatusServiceUnavailable)
			return
		}
		known := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) { return ti, nil }
		auth.RequireBearerToken(known, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next).ServeHTTP(w, req)
	})
}

// bearerToken is the request's "Authorization: Bearer <token>" token.
func bearerToken(r *http.Request) (string, bool) {
	fields := strings.Fields(r.Header.Get("Authorization"))
	if len(fields) != 2 || !strings.EqualFold(fields[0], "bearer") {
		return "", false
	}
	return fields[1], true
}

// description fits s to an error_description's characters (RFC 6750 §3: printable ASCII
// without '"' and '\'), at most 200 of them.
func description(s string) string {
	out := make([]byte, 0, min(len(s), 200))
	for i := 0; i < len(s) && len(out) < 200; i++ {
		switch c := s[i]; {
		case c == '"':
			out = append(out, '\'')
		case c >= 0x20 && c <= 0x7e && c != '\\':
			out = append(out, c)
		}
	}
	return string(out)
}

// identityKey is where TokenInfo.Extra carries the *Identity.
const identityKey = "toolgate.dev/identity"

// identityOf is the identity the bearer-token middleware put into ctx.
func identityOf(ctx context.Context) *Identity {
	ti := auth.TokenInfoFromContext(ctx)
	if ti == nil {
		return nil
	}
	id, _ := ti.Extra[identityKey].(*Identity)
	return id
}
