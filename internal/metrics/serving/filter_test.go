package serving

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/rest"
)

// answer is what a filtered request got: status, WWW-Authenticate, and whether the metrics
// handler behind the filter served it.
type answer struct {
	code      int
	challenge string
	served    bool
}

// serve sends GET /metrics with the Authorization header auth ("" for none) through the
// filter in front of a handler that only records it was reached.
func serve(t *testing.T, filter func(logr.Logger, http.Handler) (http.Handler, error), auth string) answer {
	t.Helper()
	var served bool
	h, err := filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served = true
		_, _ = w.Write([]byte("# TYPE x counter\n"))
	}))
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if !served && strings.Contains(rec.Body.String(), "# TYPE") {
		t.Errorf("a refusal carries metrics: %q", rec.Body.String())
	}
	return answer{code: rec.Code, challenge: rec.Header().Get("WWW-Authenticate"), served: served}
}

// Each refusal is answered for what it is: no token or one the API server refuses 401 with
// a Bearer challenge, a user RBAC does not allow 403, a review that failed 503; only an
// allowed user reaches the metrics, and the authorizer is asked about get /metrics.
func TestFilterAnswers(t *testing.T) {
	tokens := authenticator.TokenFunc(func(_ context.Context, token string) (*authenticator.Response, bool, error) {
		switch token {
		case "scraper", "stranger", "sar-down":
			return &authenticator.Response{User: &user.DefaultInfo{Name: token}}, true, nil
		case "review-down":
			return nil, false, errors.New("connection refused")
		}
		return nil, false, nil
	})
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetVerb() != "get" || a.GetPath() != "/metrics" || a.IsResourceRequest() {
			t.Errorf("asked about %s %s (resource %v), want get /metrics", a.GetVerb(), a.GetPath(), a.IsResourceRequest())
		}
		switch a.GetUser().GetName() {
		case "scraper":
			return authorizer.DecisionAllow, "", nil
		case "sar-down":
			return authorizer.DecisionNoOpinion, "", errors.New("connection refused")
		}
		return authorizer.DecisionNoOpinion, "no RBAC rule", nil
	})
	tests := []struct {
		name, auth string
		want       answer
	}{
		{name: "no token", want: answer{code: http.StatusUnauthorized, challenge: "Bearer"}},
		{name: "another scheme", auth: "Basic c2NyYXBlcjp4", want: answer{code: http.StatusUnauthorized, challenge: "Bearer"}},
		{name: "an empty bearer", auth: "Bearer ", want: answer{code: http.StatusUnauthorized, challenge: "Bearer"}},
		{name: "an unknown token", auth: "Bearer not-a-token", want: answer{code: http.StatusUnauthorized, challenge: `Bearer error="invalid_token"`}},
		{name: "the review failed", auth: "Bearer review-down", want: answer{code: http.StatusServiceUnavailable}},
		{name: "a user without the reader role", auth: "Bearer stranger", want: answer{code: http.StatusForbidden}},
		{name: "the access review failed", auth: "Bearer sar-down", want: answer{code: http.StatusServiceUnavailable}},
		{name: "the scraper", auth: "bearer scraper", want: answer{code: http.StatusOK, served: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := serve(t, newFilter(tokens, authz), tc.auth); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// fakeAPIServer answers TokenReviews and SubjectAccessReviews as a kube-apiserver does: a
// token it does not know is not authenticated, with the reason in status.error (the answer
// controller-runtime's filter turned into a 500); the token "review-down" gets a 500 from
// the API server itself. Only the user "scraper" may get /metrics.
func fakeAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch req.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authnv1.TokenReview
			if err := json.NewDecoder(req.Body).Decode(&tr); err != nil {
				t.Errorf("TokenReview: %v", err)
			}
			switch tr.Spec.Token {
			case "review-down":
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,"reason":"InternalError"}`))
				return
			case "scraper", "stranger":
				tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: tr.Spec.Token}}
			default:
				tr.Status = authnv1.TokenReviewStatus{Error: "[invalid bearer token, square/go-jose: error in cryptographic primitive]"}
			}
			_ = json.NewEncoder(w).Encode(tr)
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authzv1.SubjectAccessReview
			if err := json.NewDecoder(req.Body).Decode(&sar); err != nil {
				t.Errorf("SubjectAccessReview: %v", err)
			}
			sar.Status.Allowed = sar.Spec.User == "scraper" && sar.Spec.NonResourceAttributes != nil &&
				sar.Spec.NonResourceAttributes.Path == "/metrics" && sar.Spec.NonResourceAttributes.Verb == "get"
			_ = json.NewEncoder(w).Encode(sar)
		default:
			t.Errorf("unexpected request %s %s", req.Method, req.URL.Path)
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(srv.Close)
	// JSON, which this fake speaks (client-go would send built-in types as protobuf).
	return &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"}}
}

// The filter the manager's metrics server is given, against an API server: a token it does
// not know is a 401 (controller-runtime's filter answered 500), a TokenReview the API
// server failed a 503, a known user without get /metrics a 403, the scraper its metrics.
func TestOptionsFilterAgainstAPIServer(t *testing.T) {
	cfg := fakeAPIServer(t)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	filter, err := Options(":8443", true, false, "").FilterProvider(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, auth string
		want       answer
	}{
		{name: "no token", want: answer{code: http.StatusUnauthorized, challenge: "Bearer"}},
		{name: "a token the API server does not know", auth: "Bearer not-a-token", want: answer{code: http.StatusUnauthorized, challenge: `Bearer error="invalid_token"`}},
		{name: "the TokenReview failed", auth: "Bearer review-down", want: answer{code: http.StatusServiceUnavailable}},
		{name: "a user without get /metrics", auth: "Bearer stranger", want: answer{code: http.StatusForbidden}},
		{name: "the scraper", auth: "Bearer scraper", want: answer{code: http.StatusOK, served: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := serve(t, filter, tc.auth); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
