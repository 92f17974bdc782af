package toolgatetest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The cases are the kubelet's (k8s.io/kubernetes/third_party/forked/golang/expansion
// expand_test.go) that matter for env values.
func TestExpandFollowsTheKubelet(t *testing.T) {
	vars := map[string]string{"VAR_A": "A", "VAR_B": "B", "EMPTY": ""}
	mapping := func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		return "$(" + name + ")"
	}
	cases := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(VAR_A)", "A"},
		{"___$(VAR_A)___", "___A___"},
		{"$(VAR_A)-$(VAR_B)", "A-B"},
		{"$(EMPTY)", ""},
		{"$(UNDEFINED)", "$(UNDEFINED)"},
		{"$$", "$"},
		{"$$$$", "$$"},
		{"$$(VAR_A)", "$(VAR_A)"},
		{"$$$(VAR_A)", "$A"},
		{"$", "$"},
		{"a$", "a$"},
		{"$a", "$a"},
		{"$(VAR_A", "$(VAR_A"},
		{"foo$()bar", "foo$()bar"},
		{"$(VAR_A)$", "A$"},
		{"echo $$ $(HOME) $$(X)", "echo $ $(HOME) $(X)"},
		{"$é", "$é"},
	}
	for _, tc := range cases {
		if got := expand(tc.in, mapping); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestExpandEnvSeesOnlyEarlierVariables(t *testing.T) {
	c := &corev1.Container{Env: []corev1.EnvVar{
		{Name: "LATER_REF", Value: "$(FIRST)"},
		{Name: "FIRST", Value: "1"},
		{Name: "SECOND", Value: "$(FIRST)+$(FIRST)"},
		{Name: "ESCAPED", Value: "$$(FIRST)"},
	}}
	got := expandEnv(c)
	want := map[string]string{"LATER_REF": "$(FIRST)", "FIRST": "1", "SECOND": "1+1", "ESCAPED": "$(FIRST)"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// Escaping every $ as $$ is the inverse of the expansion, whatever the value holds.
func TestEscapedValuesSurviveExpansion(t *testing.T) {
	for _, v := range []string{`{"cmd":"echo $$ $(HOME) $$(X)"}`, "$", "$$$", "$(", "$()", "a$(b)c$"} {
		if got := expand(strings.ReplaceAll(v, "$", "$$"), func(string) string { return "MAPPED" }); got != v {
			t.Errorf("escaped %q expands to %q", v, got)
		}
	}
}
