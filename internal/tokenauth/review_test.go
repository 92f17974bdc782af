package tokenauth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// reviewerWith answers every TokenReview with status (and counts them).
func reviewerWith(status authenticationv1.TokenReviewStatus, calls *int) *Reviewer {
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
	r := newReviewer(cs.AuthenticationV1().TokenReviews(), DefaultAudience)
	r.size = 2
	return r
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
		invalid bool // want ErrInvalidToken (401)
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
			got, _, err := r.Review(context.Background(), tc.token)
			switch {
			case tc.invalid:
				if !errors.Is(err, ErrInvalidToken) {
					t.Fatalf("err = %v, want ErrInvalidToken", err)
				}
				return
			case tc.other:
				if err == nil || errors.Is(err, ErrInvalidToken) {
					t.Fatalf("err = %v, want a review error", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if got.Username != user.Username || got.UID != "u1" || fmt.Sprint(got.Groups) != "[a b]" || got.Extra["authentication.kubernetes.io/pod-name"][0] != "p" {
				t.Errorf("identity %+v", got)
			}
			if _, _, err := r.Review(context.Background(), tc.token); err != nil || calls != 1 {
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
		if _, _, err := r.Review(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Fatalf("%d reviews, want 1", calls)
	}
	now = now.Add(6 * time.Second)
	if _, _, err := r.Review(context.Background(), tok); err != nil || calls != 2 {
		t.Fatalf("after exp: err %v, %d reviews, want 2", err, calls)
	}
	// The TTL ends a cached answer too.
	now = now.Add(r.ttl + time.Second)
	if _, _, err := r.Review(context.Background(), "opaque"); err != nil || calls != 3 {
		t.Fatalf("opaque: %v %d", err, calls)
	}
	now = now.Add(r.ttl + time.Second)
	if _, _, err := r.Review(context.Background(), "opaque"); err != nil || calls != 4 {
		t.Fatalf("after the TTL: err %v, %d reviews, want 4", err, calls)
	}
	// At most size tokens are kept.
	for i := range 10 {
		if _, _, err := r.Review(context.Background(), fmt.Sprint("t", i)); err != nil {
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
		if _, _, err := r.Review(context.Background(), "bad-token"); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("err = %v, want ErrInvalidToken", err)
		}
	}
	if calls != 1 {
		t.Errorf("%d reviews for five requests with one refused token, want 1", calls)
	}
	now = now.Add(6 * time.Second)
	if _, _, err := r.Review(context.Background(), "bad-token"); !errors.Is(err, ErrInvalidToken) || calls != 2 {
		t.Errorf("after the refusal TTL: err %v, %d reviews, want 2", err, calls)
	}
	// A review that failed is not a refusal: it is not remembered.
	for range 2 {
		if _, _, err := r.Review(context.Background(), "api-down"); err == nil || errors.Is(err, ErrInvalidToken) {
			t.Fatalf("err = %v, want a review error", err)
		}
	}
	if calls != 4 {
		t.Errorf("%d reviews, want 4 (the API error is asked again)", calls)
	}
	// A flood of refused tokens stays within its own bound and leaves good entries alone.
	for i := range 10 {
		_, _, _ = r.Review(context.Background(), fmt.Sprint("bad", i))
	}
	if len(r.refused) > r.size || len(r.cache) != 0 {
		t.Errorf("%d refused and %d accepted entries", len(r.refused), len(r.cache))
	}
}

// Two tokens of one ServiceAccount differ only in the extras that name the token: one user
// (UserKey), two identities (Key). Groups and other extras make another user.
func TestUserKey(t *testing.T) {
	sa := func(credential, pod string, groups ...string) *Identity {
		return &Identity{Username: "system:serviceaccount:ns:a", UID: "u1", Groups: groups, Extra: map[string][]string{
			"authentication.kubernetes.io/credential-id": {credential}, "authentication.kubernetes.io/pod-name": {pod}}}
	}
	first, second := sa("JTI=1", "p1", "g"), sa("JTI=2", "p2", "g")
	if first.Key() == second.Key() {
		t.Error("two tokens have one Key")
	}
	if first.UserKey() != second.UserKey() {
		t.Error("two tokens of one ServiceAccount have two UserKeys")
	}
	if first.UserKey() == sa("JTI=1", "p1", "g", "admins").UserKey() {
		t.Error("another group set is the same user")
	}
	scoped := sa("JTI=1", "p1", "g")
	scoped.Extra["scopes.example/team"] = []string{"x"}
	if scoped.UserKey() == first.UserKey() {
		t.Error("an extra that is not a token's is ignored")
	}
	other := sa("JTI=1", "p1", "g")
	other.Username = "system:serviceaccount:ns:b"
	if other.UserKey() == first.UserKey() {
		t.Error("another username is the same user")
	}
}
