package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// reviewerWith answers every TokenReview with status (and counts them).
func reviewerWith(status authenticationv1.TokenReviewStatus, calls *int) *tokenReviewer {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		*calls++
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if tr.Spec.Token == "api-down" {
			return true, nil, errors.New("connection refused")
		}
		tr.Status = status
		return true, tr, nil
	})
	return &tokenReviewer{client: cs.AuthenticationV1().TokenReviews(), audience: DefaultAudience, ttl: 20 * time.Second,
		refusalTTL: 5 * time.Second, size: 2, now: time.Now, cache: map[string]reviewed{}, refused: map[string]reviewed{}}
}

func jwt(exp time.Time) string {
	payload := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"exp":%d}`, exp.Unix()))
	return "e30." + payload + ".sig"
}

func TestTokenReviewer(t *testing.T) {
	user := authenticationv1.UserInfo{Username: "system:serviceaccount:ns:a", UID: "u1", Groups: []string{"b", "a"},
		Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"p"}}}
	cases := []struct {
		name    string
		status  authenticationv1.TokenReviewStatus
		token   string
		invalid bool // want auth.ErrInvalidToken (401)
		other   bool // want another error (500)
	}{
		{name: "accepted for the audience", status: authenticationv1.TokenReviewStatus{Authenticated: true, User: user, Audiences: []string{"toolgate"}}, token: "t"},
		{name: "not authenticated", status: authenticationv1.TokenReviewStatus{Error: "bad"}, token: "t", invalid: true},
		{name: "an audience-agnostic authenticator", status: authenticationv1.TokenReviewStatus{Authenticated: true, User: user}, token: "t", invalid: true},
		{name: "another audience", status: authenticationv1.TokenReviewStatus{Authenticated: true, User: user, Audiences: []string{"api"}}, token: "t", invalid: true},
		{name: "the API server unreachable", token: "api-down", other: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			r := reviewerWith(tc.status, &calls)
			ti, err := r.verify(context.Background(), tc.token, nil)
			switch {
			case tc.invalid:
				if !errors.Is(err, auth.ErrInvalidToken) {
					t.Fatalf("err = %v, want ErrInvalidToken", err)
				}
				return
			case tc.other:
				if err == nil || errors.Is(err, auth.ErrInvalidToken) {
					t.Fatalf("err = %v, want a review error", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			got := ti.Extra[identityKey].(*Identity)
			if got.Username != user.Username || got.UID != "u1" || fmt.Sprint(got.Groups) != "[a b]" || got.Extra["authentication.kubernetes.io/pod-name"][0] != "p" {
				t.Errorf("identity %+v", got)
			}
			if ti.UserID != got.Key() {
				t.Errorf("UserID %q, want the identity's key %q", ti.UserID, got.Key())
			}
			if _, err := r.verify(context.Background(), tc.token, nil); err != nil || calls != 1 {
				t.Errorf("second verify: err %v, %d reviews, want 1 (cached)", err, calls)
			}
		})
	}
}

func TestTokenReviewCacheBounds(t *testing.T) {
	calls := 0
	r := reviewerWith(authenticationv1.TokenReviewStatus{Authenticated: true,
		User: authenticationv1.UserInfo{Username: "u"}, Audiences: []string{"toolgate"}}, &calls)
	now := time.Now()
	r.now = func() time.Time { return now }

	// A JWT expiring in 5 s is cached for 5 s, not the TTL.
	tok := jwt(now.Add(5 * time.Second))
	for range 2 {
		if _, err := r.verify(context.Background(), tok, nil); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Fatalf("%d reviews, want 1", calls)
	}
	now = now.Add(6 * time.Second)
	if _, err := r.verify(context.Background(), tok, nil); err != nil || calls != 2 {
		t.Fatalf("after exp: err %v, %d reviews, want 2", err, calls)
	}
	// The TTL ends a cached answer too.
	now = now.Add(r.ttl + time.Second)
	if _, err := r.verify(context.Background(), "opaque", nil); err != nil || calls != 3 {
		t.Fatalf("opaque: %v %d", err, calls)
	}
	now = now.Add(r.ttl + time.Second)
	if _, err := r.verify(context.Background(), "opaque", nil); err != nil || calls != 4 {
		t.Fatalf("after the TTL: err %v, %d reviews, want 4", err, calls)
	}
	// At most size tokens are kept.
	for i := range 10 {
		if _, err := r.verify(context.Background(), fmt.Sprint("t", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.cache) > r.size {
		t.Errorf("%d cached tokens, more than %d", len(r.cache), r.size)
	}
}

func TestTokenReviewRefusalsAreCachedBriefly(t *testing.T) {
	calls := 0
	r := reviewerWith(authenticationv1.TokenReviewStatus{Error: "bad"}, &calls)
	now := time.Now()
	r.now = func() time.Time { return now }
	for range 5 {
		if _, err := r.verify(context.Background(), "bad-token", nil); !errors.Is(err, auth.ErrInvalidToken) {
			t.Fatalf("err = %v, want ErrInvalidToken", err)
		}
	}
	if calls != 1 {
		t.Errorf("%d reviews for five requests with one refused token, want 1", calls)
	}
	now = now.Add(6 * time.Second)
	if _, err := r.verify(context.Background(), "bad-token", nil); !errors.Is(err, auth.ErrInvalidToken) || calls != 2 {
		t.Errorf("after the refusal TTL: err %v, %d reviews, want 2", err, calls)
	}
	// A review that failed is not a refusal: it is not remembered.
	for range 2 {
		if _, err := r.verify(context.Background(), "api-down", nil); err == nil || errors.Is(err, auth.ErrInvalidToken) {
			t.Fatalf("err = %v, want a review error", err)
		}
	}
	if calls != 4 {
		t.Errorf("%d reviews, want 4 (the API error is asked again)", calls)
	}
	// A flood of refused tokens stays within its own bound and leaves good entries alone.
	for i := range 10 {
		_, _ = r.verify(context.Background(), fmt.Sprint("bad", i), nil)
	}
	if len(r.refused) > r.size || len(r.cache) != 0 {
		t.Errorf("%d refused and %d accepted entries", len(r.refused), len(r.cache))
	}
}
