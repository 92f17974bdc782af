package egress

import (
	"strings"
	"testing"
	"time"
)

func TestAllowed(t *testing.T) {
	rules := []Rule{{Host: "api.example.com", Port: 443}, {Host: "*.svc.example.org", Port: 8443}}
	cases := []struct {
		host string
		port int32
		want bool
	}{
		{"api.example.com", 443, true},
		{"api.example.com", 80, false},
		{"example.com", 443, false},
		{"xapi.example.com", 443, false},
		{"a.svc.example.org", 8443, true},
		{"a.b.svc.example.org", 8443, true},
		{"svc.example.org", 8443, false},
		{".svc.example.org", 8443, false},
		{"a.svc.example.org", 443, false},
		{"asvc.example.org", 8443, false},
		{"a.svc.example.org.evil.test", 8443, false},
	}
	for _, c := range cases {
		if got := Allowed(rules, c.host, c.port); got != c.want {
			t.Errorf("Allowed(%q, %d) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
}

func TestNormalizeHost(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"Allowed.TEST.", "allowed.test", true},
		{"a_b.example.com", "a_b.example.com", true},
		{"127.0.0.1", "", false},
		{"2130706433", "", false}, // inet_aton's one-number form of 127.0.0.1
		{"127.1", "", false},
		{"::1", "", false},
		{"a..b", "", false},
		{"-a.b", "", false},
		{"a.b\x1b[31m", "", false},
		{"a b.c", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, ok := NormalizeHost(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestValidateRule(t *testing.T) {
	for _, r := range []Rule{{"example.com", 443}, {"*.example.com", 1}, {"a.b-c.example", 65535}} {
		if err := ValidateRule(r); err != nil {
			t.Errorf("ValidateRule(%v) = %v, want nil", r, err)
		}
	}
	for _, r := range []Rule{{"a.*.example.com", 443}, {"*example.com", 443}, {"*", 443}, {"Example.com", 443},
		{"10.0.0.1", 443}, {"example.com", 0}, {"example.com", 70000}, {"*.*.example.com", 443}} {
		if err := ValidateRule(r); err == nil {
			t.Errorf("ValidateRule(%v) = nil, want an error", r)
		}
	}
}

func TestGrantSignVerify(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Unix(1_000_000, 0)
	g := Grant{Namespace: "ns", Call: "c", UID: "u1", Attempt: 2, Allow: []Rule{{"a.test", 443}}, Expires: now.Unix() + 60}
	cred, err := Sign(key, g)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Verify(key, cred, now)
	if err != nil || got.Key() != "u1/2" || len(got.Allow) != 1 {
		t.Fatalf("Verify = %+v, %v", got, err)
	}
	if _, err := Verify(key, cred, now.Add(61*time.Second)); err == nil {
		t.Error("an expired grant verified")
	}
	if _, err := Verify([]byte("another key, 32 bytes long......"), cred, now); err == nil {
		t.Error("a grant verified under another key")
	}
	// The body holds its credential: widening the allow list breaks the signature.
	wide := g
	wide.Allow = append(wide.Allow, Rule{"*.test", 443})
	forged, _ := Sign([]byte("the body's own key, 32 bytes ...."), wide)
	forgedPayload, _, _ := strings.Cut(forged, ".")
	_, sig, _ := strings.Cut(cred, ".")
	if _, err := Verify(key, forgedPayload+"."+sig, now); err == nil {
		t.Error("a grant with a widened allow list verified under the original signature")
	}
	if _, err := Sign([]byte("short"), g); err == nil {
		t.Error("Sign took a short key")
	}
}

func TestRecorderBounds(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	r := NewRecorder(func() time.Time { return now })
	g := Grant{UID: "u", Attempt: 1, Expires: now.Unix() + 10}
	for i := 0; i < MaxDestinations+5; i++ {
		r.Note(g, "h"+string(rune('a'+i%26))+string(rune('a'+i/26))+".test", 443, "")
	}
	rec, ok := r.Get(g.Key())
	if !ok || len(rec.Destinations) != MaxDestinations || rec.Omitted != 5 {
		t.Fatalf("record: %d destinations, %d omitted (ok %v)", len(rec.Destinations), rec.Omitted, ok)
	}
	now = now.Add(keepAfterExpiry + time.Minute)
	r.Note(Grant{UID: "other", Attempt: 1, Expires: now.Unix() + 10}, "x.test", 443, "")
	if _, ok := r.Get(g.Key()); ok {
		t.Error("an expired attempt's record was kept")
	}
}
