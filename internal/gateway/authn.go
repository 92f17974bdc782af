package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"

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

// verify is the SDK's auth.TokenVerifier: the TokenInfo carries the identity (UserID is
// its Key, which the SDK binds each session to); a refused token is the SDK's
// ErrInvalidToken (401).
func (r *tokenReviewer) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	id, expires, err := r.Review(ctx, token)
	if errors.Is(err, tokenauth.ErrInvalidToken) {
		return nil, fmt.Errorf("%w: %w", auth.ErrInvalidToken, err)
	}
	if err != nil {
		return nil, err
	}
	return &auth.TokenInfo{UserID: id.Key(), Expiration: expires, Extra: map[string]any{identityKey: id}}, nil
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
