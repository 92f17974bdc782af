package v1alpha1

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestPatternsAreTheMarkers: the constants clients check against (the CLI's --session) are
// the patterns the CRD enforces.
func TestPatternsAreTheMarkers(t *testing.T) {
	data, err := os.ReadFile("toolcall_types.go")
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	for field, want := range map[string]string{"Session": SessionPattern, "Requester": NamePattern, "RequesterGroups": NamePattern} {
		decl := strings.Index(src, "\n\t"+field+" ")
		if decl < 0 {
			t.Fatalf("no declaration of %s", field)
		}
		markers := src[strings.LastIndex(src[:decl], "\n\n")+1 : decl]
		m := regexp.MustCompile("validation:(?:items:)?Pattern=`([^`]*)`").FindStringSubmatch(markers)
		if m == nil || m[1] != want {
			t.Errorf("%s: marker pattern %v, want %s", field, m, want)
		}
	}
}

func TestPatterns(t *testing.T) {
	session, name := regexp.MustCompile(SessionPattern), regexp.MustCompile(NamePattern)
	for _, s := range []string{"review-42", "s1", "chat-1", "3f2b8c1e-9a4d-4f6e-8b7a-1c2d3e4f5a6b", "team/conv:42", "alice@example.com", "YWJj+/=="} {
		if !session.MatchString(s) {
			t.Errorf("session %q refused", s)
		}
	}
	for _, s := range []string{"s1\nArguments:", "a\x1b[2J", "a b", "a\u202eb", "a\u200bb", "a\x7f", "a\u0085", "a\rb", "ünïcode"} {
		if session.MatchString(s) {
			t.Errorf("session %q accepted", s)
		}
	}
	for _, s := range []string{"alice", "system:serviceaccount:agents:coder", "Zoë Müller", "oidc:https://issuer#42", "مرحبا"} {
		if !name.MatchString(s) {
			t.Errorf("name %q refused", s)
		}
	}
	for _, s := range []string{"alice\n", "a\x1b]0;x\x07", "a\u202eb", "a\u2066b", "a\u200db", "a\ufeff", "a\u2028b", "a\x00"} {
		if name.MatchString(s) {
			t.Errorf("name %q accepted", s)
		}
	}
}
