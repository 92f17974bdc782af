package tokenauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/client-go/rest"
)

// DefaultAudience is the audience a client's token must be for (kubectl create token
// --audience toolgate): a token minted for the API server or another service is refused,
// so that no token meant for someone else passes through toolgate's servers.
const DefaultAudience = "toolgate"

// ErrInvalidToken is wrapped by every refusal of the token itself (a 401); other errors
// (the API server unreachable) are the server's.
var ErrInvalidToken = errors.New("invalid token")

// SAExtras are the user extras of a Kubernetes service-account token: a server passes these
// on when it acts as the token's identity.
var SAExtras = []string{
	"authentication.kubernetes.io/credential-id",
	"authentication.kubernetes.io/node-name",
	"authentication.kubernetes.io/node-uid",
	"authentication.kubernetes.io/pod-name",
	"authentication.kubernetes.io/pod-uid",
}

// Defaults of the token review cache.
const (
	defaultReviewTTL  = 20 * time.Second
	defaultReviewSize = 4096
	// defaultRefusalTTL is how long a token the API server refused is refused without
	// asking again: a client retrying a bad token (or many clients sharing one) costs the
	// API server one TokenReview per token and TTL, not one per request.
	defaultRefusalTTL = 5 * time.Second
)

// Identity is who a client's token says it is, as the API server's TokenReview reports
// it: the server acts as exactly this user (impersonation).
type Identity struct {
	Username string
	UID      string
	Groups   []string
	Extra    map[string][]string
}

// Key identifies the identity as a whole (username, uid, groups and extra): two tokens of
// one user with different groups are two identities, each with its own permissions.
func (id *Identity) Key() string {
	b, _ := json.Marshal(id) // strings only: cannot fail
	sum := sha256.Sum256(b)
	return id.Username + "/" + hex.EncodeToString(sum[:8])
}

// UserKey identifies the user behind a token, whichever of their tokens it is: Key without
// the extras that describe the token rather than the user (SAExtras: each token of a
// ServiceAccount has a credential-id of its own, a token bound to a Pod names that Pod). Two
// tokens of one ServiceAccount are one user, with one set of permissions (RBAC sees the
// username and groups); limits that count users count this.
func (id *Identity) UserKey() string {
	u := Identity{Username: id.Username, UID: id.UID, Groups: id.Groups}
	for k, v := range id.Extra {
		if !slices.Contains(SAExtras, k) {
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra[k] = v
		}
	}
	return u.Key()
}

// Impersonate is cfg acting as id; extras whose key is not in keep are left out.
func (id *Identity) Impersonate(cfg *rest.Config, keep []string) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Impersonate = rest.ImpersonationConfig{UserName: id.Username, UID: id.UID, Groups: id.Groups}
	for k, v := range id.Extra {
		if slices.Contains(keep, k) {
			if out.Impersonate.Extra == nil {
				out.Impersonate.Extra = map[string][]string{}
			}
			out.Impersonate.Extra[k] = v
		}
	}
	return out
}

// Reviewer asks the API server who a bearer token belongs to, for one audience, and
// remembers the answer for a short while (TTL, at most size tokens), so that every request
// of a session is not a TokenReview. A cached answer outlives neither the TTL nor the
// token's own expiry (for a JWT); a revoked token is therefore refused within TTL.
// A token the API server refused (not authenticated, another audience) is remembered too,
// for refusalTTL, in a map of its own (so that a flood of bad tokens cannot evict good
// ones); a review that failed (the API server unreachable) is not remembered.
type Reviewer struct {
	client     authnclient.TokenReviewInterface
	audience   string
	ttl        time.Duration
	refusalTTL time.Duration
	size       int
	now        func() time.Time

	mu      sync.Mutex
	cache   map[string]reviewed
	refused map[string]reviewed
}

type reviewed struct {
	id      *Identity
	err     error     // a refusal (ErrInvalidToken), in the refused map only
	expires time.Time // of the token, zero when unknown
	until   time.Time // of the cache entry
}

// NewReviewer reviews tokens for audience with cfg's identity (create tokenreviews).
func NewReviewer(cfg *rest.Config, audience string) (*Reviewer, error) {
	c, err := authnclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return newReviewer(c.TokenReviews(), audience), nil
}

func newReviewer(c authnclient.TokenReviewInterface, audience string) *Reviewer {
	return &Reviewer{client: c, audience: audience, ttl: defaultReviewTTL, refusalTTL: defaultRefusalTTL,
		size: defaultReviewSize, now: time.Now, cache: map[string]reviewed{}, refused: map[string]reviewed{}}
}

// Audience is the audience tokens must be for.
func (r *Reviewer) Audience() string { return r.audience }

// Review returns the token's identity and its expiry (zero when the token does not say),
// from the cache when it answered this token within the TTL.
func (r *Reviewer) Review(ctx context.Context, token string) (*Identity, time.Time, error) {
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	now := r.now()
	r.mu.Lock()
	e, ok := r.cache[key]
	no, refused := r.refused[key]
	r.mu.Unlock()
	if refused && !now.After(no.until) {
		return nil, time.Time{}, no.err
	}
	if !ok || now.After(e.until) {
		id, err := r.review(ctx, token)
		if errors.Is(err, ErrInvalidToken) && r.refusalTTL > 0 {
			r.remember(r.refused, key, reviewed{err: err, until: now.Add(r.refusalTTL)}, now)
		}
		if err != nil {
			return nil, time.Time{}, err
		}
		e = reviewed{id: id, expires: jwtExpiry(token), until: now.Add(r.ttl)}
		if !e.expires.IsZero() && e.expires.Before(e.until) {
			e.until = e.expires
		}
		r.remember(r.cache, key, e, now)
	}
	return e.id, e.expires, nil
}

func (r *Reviewer) review(ctx context.Context, token string) (*Identity, error) {
	tr, err := r.client.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{r.audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("reviewing the token (TokenReview): %w", err)
	}
	st := tr.Status
	switch {
	case !st.Authenticated:
		return nil, fmt.Errorf("%w: the API server does not accept this token for audience %q", ErrInvalidToken, r.audience)
	case !slices.Contains(st.Audiences, r.audience):
		// An authenticator that ignores audiences would accept any token: refuse.
		return nil, fmt.Errorf("%w: the token is not for audience %q", ErrInvalidToken, r.audience)
	case st.User.Username == "":
		return nil, fmt.Errorf("%w: the token has no username", ErrInvalidToken)
	}
	id := &Identity{Username: st.User.Username, UID: st.User.UID, Groups: slices.Clone(st.User.Groups)}
	sort.Strings(id.Groups)
	for k, v := range st.User.Extra {
		if id.Extra == nil {
			id.Extra = map[string][]string{}
		}
		id.Extra[k] = slices.Clone(v)
	}
	return id, nil
}

// remember stores e in cache (r.cache or r.refused), first dropping expired entries when
// it is full, then any.
func (r *Reviewer) remember(cache map[string]reviewed, key string, e reviewed, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(cache) >= r.size {
		for k, old := range cache {
			if now.After(old.until) {
				delete(cache, k)
			}
		}
		for k := range cache {
			if len(cache) < r.size {
				break
			}
			delete(cache, k)
		}
	}
	cache[key] = e
}

// jwtExpiry is the exp claim of a JWT, zero for any other token. The token is not
// verified here: the TokenReview did that; exp only shortens how long it is cached.
func jwtExpiry(token string) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == 0 {
		return time.Time{}
	}
	return time.Unix(claims.Exp, 0)
}
