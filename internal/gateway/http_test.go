package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRejectMalformed(t *testing.T) {
	cases := []struct {
		name     string
		body     string
		wantCode float64 // 0: passed on
	}{
		{"truncated JSON", `{"jsonrpc":"2.0","id":1,"method":"tools/list"`, -32700},
		{"empty body", ``, -32700},
		{"not JSON at all", `hello`, -32700},
		{"wrong version tag", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, -32600},
		{"a JSON string", `"ping"`, -32600},
		{"an empty batch", `[]`, -32600},
		{"a batch with a bad member", `[{"jsonrpc":"2.0","id":1,"method":"ping"}, 3]`, -32600},
		{"a request", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var passed string
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				passed = string(b)
			})
			rec := httptest.NewRecorder()
			rejectMalformed(next, 1<<20).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body)))
			if tc.wantCode == 0 {
				if passed != tc.body {
					t.Fatalf("the SDK got body %q, want %q", passed, tc.body)
				}
				return
			}
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
			}
			var got map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if diff := cmp.Diff(tc.wantCode, got["error"].(map[string]any)["code"]); diff != "" || got["id"] != nil || got["jsonrpc"] != "2.0" {
				t.Errorf("response %v (code diff %s)", got, diff)
			}
		})
	}
}

// An error_description holds printable ASCII without '"' and '\' (RFC 6750 §3), bounded.
func TestErrorDescription(t *testing.T) {
	for in, want := range map[string]string{
		`invalid token: not for audience "toolgate"`: `invalid token: not for audience 'toolgate'`,
		"back\\slash, tab\tand ünïcode\x00":          "backslash, taband ncode",
		strings.Repeat("x", 300):                     strings.Repeat("x", 200),
	} {
		if got := description(in); got != want {
			t.Errorf("description(%q) = %q, want %q", in, got, want)
		}
	}
}
