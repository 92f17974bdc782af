package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/agentclient"
)

// newTestServer is a kubeconfig-mode console whose API server is never reached.
func newTestServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(Options{
		Client: &agentclient.Client{Namespace: "default", Identity: "carol"},
		Config: &rest.Config{Host: "https://127.0.0.1:1"},
		Decide: func(context.Context, *agentclient.Client, *v1alpha1.ToolCall, v1alpha1.ApprovalDecision, string) error {
			t.Fatal("Decide called")
			return nil
		},
		Describe: func(context.Context, *agentclient.Client, kubernetes.Interface, string) (*CallView, error) {
			t.Fatal("Describe called")
			return nil, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSignInAndTheGuardsOfAPost(t *testing.T) {
	s := newTestServer(t)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	type answer struct {
		StatusCode int
		Header     http.Header
		cookies    []*http.Cookie
	}
	get := func(path string, cookie *http.Cookie) answer {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return answer{StatusCode: resp.StatusCode, Header: resp.Header, cookies: resp.Cookies()}
	}

	if r := get("/", nil); r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != loginPath {
		t.Errorf("/ without a session: %d %s, want a redirect to the sign-in page", r.StatusCode, r.Header.Get("Location"))
	}
	if r := get(loginPath+"?secret=wrong", nil); r.StatusCode != http.StatusOK || len(r.cookies) != 0 {
		t.Errorf("a wrong secret: %d, cookies %v; want the sign-in page and no session", r.StatusCode, r.cookies)
	}
	u, _ := url.Parse(s.LoginURL(srv.URL))
	r := get(u.RequestURI(), nil)
	if r.StatusCode != http.StatusSeeOther || len(r.cookies) != 1 {
		t.Fatalf("the sign-in link: %d, cookies %v", r.StatusCode, r.cookies)
	}
	c := r.cookies[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/", c)
	}
	for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy", "X-Frame-Options"} {
		if r.Header.Get(h) == "" {
			t.Errorf("no %s header", h)
		}
	}
	// no-referrer would make a browser send "Origin: null" with a form POST, which the
	// cross-origin check refuses over plain HTTP (no Sec-Fetch-Site): the deployed console.
	if got := r.Header.Get("Referrer-Policy"); got != "same-origin" {
		t.Errorf("Referrer-Policy %q, want same-origin", got)
	}
	if r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("a CORS header")
	}

	post := func(form url.Values, header http.Header) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/calls/ns/x/decision", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header[k] = v
		}
		req.AddCookie(c)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	want := s.sessions.csrfToken(c.Value)
	cases := []struct {
		name   string
		form   url.Values
		header http.Header
	}{
		{"no CSRF token", url.Values{"decision": {"Approve"}}, nil},
		{"another session's token", url.Values{csrfField: {s.sessions.csrfToken("other")}}, nil},
		{"the right token from another site", url.Values{csrfField: {want}}, http.Header{"Sec-Fetch-Site": {"cross-site"}}},
		{"the right token from another origin", url.Values{csrfField: {want}}, http.Header{"Origin": {"http://evil.example"}}},
	}
	for _, tc := range cases {
		if got := post(tc.form, tc.header); got != http.StatusForbidden {
			t.Errorf("%s: %d, want 403 (and Decide not called)", tc.name, got)
		}
	}
}

func TestCard(t *testing.T) {
	deadline := metav1.NewTime(time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC))
	call := &v1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u1"},
		Spec:       v1alpha1.ToolCallSpec{Tool: "sh", Requester: "alice", Arguments: runtime.RawExtension{Raw: []byte(`{"command":"ping x"}`)}},
		Status: v1alpha1.ToolCallStatus{
			Phase: v1alpha1.PhaseAwaitingApproval, ArgumentsDigest: "sha256:d", ApprovalDeadline: &deadline,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionAdmitted, Message: "a person must approve it"}},
			Tool: &v1alpha1.ToolSnapshot{Name: "sh", Spec: &v1alpha1.ToolSpec{
				Presentation: &v1alpha1.Presentation{Call: `'$ ' + arguments.command`}}},
		},
	}
	frozen, err := pipeline.Freeze(call.Spec.Arguments.Raw, pipeline.FreezeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	call.Status.ArgumentsDigest = frozen.Digest()
	got := newCard(call, "alice", deadline.Add(-90*time.Second))
	want := card{Namespace: "ns", Name: "c", UID: "u1", Present: "$ ping x", Tool: "sh", Requester: "alice",
		Phase: "AwaitingApproval", Asked: "a person must approve it", Digest: frozen.Digest(),
		Arguments: `{"command":"ping x"}`, Deadline: "2026-12-02T07:00:00Z", Left: "1m30s", Awaiting: true, Self: true}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("card (-want +got):\n%s", d)
	}

	call.Status.ArgumentsDigest = "sha256:" + strings.Repeat("0", 64)
	if c := newCard(call, "alice", time.Now()); !strings.Contains(c.ArgumentsError, "digest is "+frozen.Digest()+", not the call's") {
		t.Errorf("arguments whose digest is not the call's: %q", c.ArgumentsError)
	}

	call.Status.Tool.Spec.Presentation.Call = `arguments.missing`
	if c := newCard(call, "carol", time.Now()); c.Present != "" || c.PresentError == "" || c.Self {
		t.Errorf("a failing presentation: %+v; want no text, the error, and not carol's own call", c)
	}
}

func TestAwaitingSortsByDeadline(t *testing.T) {
	at := func(min int) *metav1.Time {
		t := metav1.NewTime(time.Date(2026, 1, 1, 0, min, 0, 0, time.UTC))
		return &t
	}
	mk := func(name string, phase v1alpha1.ToolCallPhase, deadline *metav1.Time) v1alpha1.ToolCall {
		return v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Status: v1alpha1.ToolCallStatus{Phase: phase, ApprovalDeadline: deadline}}
	}
	calls := []v1alpha1.ToolCall{
		mk("late", v1alpha1.PhaseAwaitingApproval, at(9)), mk("done", v1alpha1.PhaseSucceeded, at(1)),
		mk("none", v1alpha1.PhaseAwaitingApproval, nil), mk("soon", v1alpha1.PhaseAwaitingApproval, at(2)),
	}
	var names []string
	for _, c := range awaiting(calls) {
		names = append(names, c.Name)
	}
	if d := cmp.Diff([]string{"soon", "late", "none"}, names); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
}
