package serving

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// As controller-runtime's filters.WithAuthenticationAndAuthorization has them.
const (
	reviewTimeout = 10 * time.Second
	tokenCacheTTL = time.Minute
)

// withAuthenticationAndAuthorization is controller-runtime's
// filters.WithAuthenticationAndAuthorization (the same TokenReview and SubjectAccessReview,
// the same caches) with each failure answered for what it is. That filter answers 500 to a
// token the API server refuses: its bearer-token authenticator reports every refusal as an
// error. Here a refusal is the client's (401), a review the API server did not answer is
// the server's (503, and the scraper tries again at its next scrape: no retries here).
func withAuthenticationAndAuthorization(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authnclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authzclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	sar, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: authz,
		AllowCacheTTL:             5 * time.Minute,
		DenyCacheTTL:              30 * time.Second,
		WebhookRetryBackoff:       &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5},
	}.New()
	if err != nil {
		return nil, fmt.Errorf("the metrics authorizer: %w", err)
	}
	tokens := cache.New(tokenReviews{authn.TokenReviews()}, false, tokenCacheTTL, tokenCacheTTL)
	return newFilter(tokens, sar), nil
}

// tokenReviews asks the API server who a token belongs to (for its own audiences). A token
// it does not authenticate is a refusal (false, no error), whatever reason it gives; only a
// review that failed is an error.
type tokenReviews struct {
	client authnclient.TokenReviewInterface
}

func (t tokenReviews) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := t.client.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("reviewing the token (TokenReview): %w", err)
	}
	st := review.Status
	if !st.Authenticated || st.User.Username == "" {
		return nil, false, nil
	}
	extra := map[string][]string{}
	for k, v := range st.User.Extra {
		extra[k] = v
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: st.User.Username, UID: st.User.UID,
		Groups: st.User.Groups, Extra: extra}}, true, nil
}

// newFilter lets through requests whose bearer token tokens accepts and whose user authz
// allows the request (verb and path), and answers the others: no token or a refused one 401
// with a Bearer challenge (RFC 6750 §3: error="invalid_token" when a token was sent), a user
// not allowed 403, a review that failed 503.
func newFilter(tokens authenticator.Token, authz authorizer.Authorizer) metricsserver.Filter {
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			token, ok := bearerToken(req)
			if !ok {
				w.Header().Set("WWW-Authenticate", "Bearer")
				http.Error(w, "Unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
				return
			}
			res, ok, err := tokens.AuthenticateToken(req.Context(), token)
			switch {
			case err != nil:
				log.Error(err, "Reviewing a metrics client's token")
				http.Error(w, "the token could not be reviewed (TokenReview failed): try again", http.StatusServiceUnavailable)
				return
			case !ok:
				log.V(4).Info("Refused a metrics client's token")
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
				http.Error(w, "Unauthorized: the API server does not accept this token", http.StatusUnauthorized)
				return
			}
			attrs := authorizer.AttributesRecord{User: res.User, Verb: strings.ToLower(req.Method), Path: req.URL.Path}
			decision, reason, err := authz.Authorize(req.Context(), attrs)
			switch {
			case err != nil:
				log.Error(err, "Authorising a metrics client", "user", res.User.GetName())
				http.Error(w, "the request could not be authorised (SubjectAccessReview failed): try again", http.StatusServiceUnavailable)
				return
			case decision != authorizer.DecisionAllow:
				log.V(4).Info("Forbade a metrics client", "user", res.User.GetName(), "reason", reason)
				http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s", res.User.GetName(), attrs.Verb, attrs.Path), http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, req)
		}), nil
	}
}

// bearerToken is the request's "Authorization: Bearer <token>" token.
func bearerToken(req *http.Request) (string, bool) {
	fields := strings.Fields(req.Header.Get("Authorization"))
	if len(fields) != 2 || !strings.EqualFold(fields[0], "bearer") {
		return "", false
	}
	return fields[1], true
}
