/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func rule(name, expr string, v Verdict, msg string) Rule {
	return Rule{Name: name, Expression: expr, Verdict: v, Message: msg}
}

func pre(name string, order int, rules ...Rule) PolicySpec {
	return PolicySpec{Name: name, Stage: StagePreExecute, Order: order, Rules: rules}
}

func testInput(t *testing.T, args string) Input {
	return Input{
		Tool:      ToolInfo{Name: "grep", Scope: "dev", Annotations: map[string]string{"risk": "low"}},
		Call:      CallInfo{Namespace: "team-a", Session: "s1", Requester: "alice", Labels: map[string]string{"env": "prod"}},
		Arguments: mustFreeze(t, args),
	}
}

func TestPreExecute(t *testing.T) {
	c := newTestCompiler(t)
	tests := []struct {
		name  string
		specs []PolicySpec
		args  string
		want  Decision
	}{
		{"no policies allow", nil, `{}`, Decision{Verdict: Allow, Reason: ReasonPolicyAllowed, Message: "no policy denied the call"}},
		{"false rule allows", []PolicySpec{pre("p", 0, rule("r", `arguments.path == "/etc"`, Deny, "no"))}, `{"path":"/tmp"}`,
			Decision{Verdict: Allow, Reason: ReasonPolicyAllowed, Message: "no policy denied the call"}},
		{"deny with message", []PolicySpec{pre("p", 0, rule("etc", `arguments.path.startsWith("/etc")`, Deny, "no /etc"))}, `{"path":"/etc/passwd"}`,
			Decision{Verdict: Deny, Reason: ReasonPolicyDenied, Message: "no /etc", Policy: "p", Rule: "etc"}},
		{"variables tool and call", []PolicySpec{pre("p", 0, rule("r",
			`tool.name == "grep" && tool.scope == "dev" && tool.annotations.risk == "low" && call.namespace == "team-a" && call.session == "s1" && call.requester == "alice" && call.labels.env == "prod"`,
			Deny, "all seen"))}, `{}`,
			Decision{Verdict: Deny, Reason: ReasonPolicyDenied, Message: "all seen", Policy: "p", Rule: "r"}},
		{"allow rule passes on to later rules", []PolicySpec{pre("p", 0,
			rule("admin", `call.requester == "alice"`, Allow, ""),
			rule("all", `true`, Deny, "nobody"))}, `{}`,
			Decision{Verdict: Deny, Reason: ReasonPolicyDenied, Message: "nobody", Policy: "p", Rule: "all"}},
		{"rules of one policy: ask then deny", []PolicySpec{pre("p", 0,
			rule("a", `true`, Ask, "ask"),
			rule("d", `arguments.x == 1`, Deny, "deny"),
			rule("never", `arguments.nope`, Deny, "not evaluated after deny"))}, `{"x":1}`,
			Decision{Verdict: Deny, Reason: ReasonPolicyDenied, Message: "deny", Policy: "p", Rule: "d"}},
		{"order then name; first deny stops", []PolicySpec{
			pre("b", 1, rule("r", `true`, Deny, "b denies")),
			pre("a", 1, rule("r", `true`, Deny, "a denies")),
			pre("z", 0, rule("r", `false`, Deny, "z"))}, `{}`,
			Decision{Verdict: Deny, Reason: ReasonPolicyDenied, Message: "a denies", Policy: "a", Rule: "r"}},
		{"ask recorded, later deny wins", []PolicySpec{
			pre("a", 0, rule("r", `true`, Ask, "ask")),
			pre("b", 1, rule("r", `true`, Deny, "deny"))}, `{}`,
			Decision{Verdict: Deny, Reason: ReasonPolicyDenied, Message: "deny", Policy: "b", Rule: "r"}},
		{"numbers: int, double, huge", []PolicySpec{pre("p", 0, rule("r",
			`arguments.n == 3 && arguments.n < 3.5 && arguments.f > 0.0 && arguments.huge > 1e300 && arguments.big > 9223372036854775807.0`,
			Deny, "numbers ok"))}, `{"n":3,"f":0.1,"huge":1e400,"big":18446744073709551616}`,
			Decision{Verdict: Deny, Reason: ReasonPolicyDenied, Message: "numbers ok", Policy: "p", Rule: "r"}},
		{"default message names policy and rule", []PolicySpec{pre("p", 0, rule("r", `true`, Deny, ""))}, `{}`,
			Decision{Verdict: Deny, Reason: ReasonPolicyDenied, Message: `policy "p" rule "r" decided Deny`, Policy: "p", Rule: "r"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PreExecute(c.CompilePolicies(tc.specs), testInput(t, tc.args))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPreExecuteAskWindow(t *testing.T) {
	c := newTestCompiler(t)
	specs := []PolicySpec{
		{Name: "a", Stage: StagePreExecute, Order: 0, ApprovalWindow: 10 * time.Minute, Rules: []Rule{rule("r", `true`, Ask, "first")}},
		{Name: "b", Stage: StagePreExecute, Order: 1, ApprovalWindow: 5 * time.Minute, Rules: []Rule{rule("r", `true`, Ask, "second")}},
		{Name: "c", Stage: StagePreExecute, Order: 2, Rules: []Rule{rule("r", `true`, Ask, "third")}},
	}
	got := PreExecute(c.CompilePolicies(specs), testInput(t, `{}`))
	want := Decision{Verdict: Ask, Reason: ReasonAwaitingApproval, Message: "first", Policy: "a", Rule: "r", ApprovalWindow: 5 * time.Minute}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
}

func TestPreExecuteToolSelector(t *testing.T) {
	c := newTestCompiler(t)
	p := pre("only-rm", 0, rule("r", `true`, Deny, "no rm"))
	p.Tools = []string{"rm", "shred"}
	ps := c.CompilePolicies([]PolicySpec{p})
	if d := PreExecute(ps, testInput(t, `{}`)); d.Verdict != Allow {
		t.Errorf("policy for rm applied to grep: %+v", d)
	}
	in := testInput(t, `{}`)
	in.Tool.Name = "shred"
	if d := PreExecute(ps, in); d.Verdict != Deny {
		t.Errorf("policy for shred did not apply: %+v", d)
	}
}

// TestPreExecuteFailsClosed: every kind of policy failure denies with PolicyError and
// says which policy and rule and why.
func TestPreExecuteFailsClosed(t *testing.T) {
	c, err := NewCompiler(CompilerOptions{CostLimit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	big := `{"l":[` + strings.TrimSuffix(strings.Repeat("1,", 200), ",") + `]}`
	tests := []struct {
		name string
		spec PolicySpec
		args string
		msg  []string
	}{
		{"syntax error", pre("p", 0, rule("r", `arguments.path ==`, Deny, "")), `{}`, []string{`policy "p" failed`, `rule "r"`, "Syntax error"}},
		{"not bool", pre("p", 0, rule("r", `"yes"`, Deny, "")), `{}`, []string{`rule "r"`, "want bool"}},
		{"unknown variable", pre("p", 0, rule("r", `result.isError`, Deny, "")), `{}`, []string{"undeclared reference to 'result'"}},
		{"bad verdict", pre("p", 0, rule("r", `true`, "Maybe", "")), `{}`, []string{`verdict "Maybe"`}},
		{"bad stage", PolicySpec{Name: "p", Stage: "Sometimes"}, `{}`, []string{`unknown stage "Sometimes"`}},
		{"empty expression", pre("p", 0, rule("r", ``, Deny, "")), `{}`, []string{"expression is empty"}},
		{"missing key at runtime", pre("p", 0, rule("r", `arguments.nope == 1`, Allow, "")), `{}`, []string{`policy "p" rule "r" failed`, "no such key: nope"}},
		{"dyn not bool at runtime", pre("p", 0, rule("r", `arguments.s`, Allow, "")), `{"s":"x"}`, []string{"want bool"}},
		{"cost limit", pre("p", 0, rule("r", `arguments.l.all(x, arguments.l.all(y, x == y))`, Allow, "")), big, []string{"cost limit exceeded"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := PreExecute(c.CompilePolicies([]PolicySpec{tc.spec}), testInput(t, tc.args))
			if d.Verdict != Deny || d.Reason != ReasonPolicyError || d.Policy != "p" {
				t.Fatalf("decision = %+v, want Deny PolicyError from p", d)
			}
			for _, m := range tc.msg {
				if !strings.Contains(d.Message, m) {
					t.Errorf("message %q does not contain %q", d.Message, m)
				}
			}
		})
	}
}

func TestCompilePolicyKeepsError(t *testing.T) {
	c := newTestCompiler(t)
	p := c.CompilePolicy(pre("p", 0, rule("r", `1 +`, Deny, "")))
	if p.Err() == nil || p.Name() != "p" || p.Stage() != StagePreExecute {
		t.Fatalf("policy = %v %q %q", p.Err(), p.Name(), p.Stage())
	}
	ok := c.CompilePolicy(pre("q", 0, rule("r", `true`, Deny, "")))
	if ok.Err() != nil {
		t.Fatalf("valid policy has error %v", ok.Err())
	}
}

// TestPoliciesCannotMutateArguments evaluates policies that touch every part of the
// arguments and checks that the frozen value is unchanged for later stages.
func TestPoliciesCannotMutateArguments(t *testing.T) {
	c := newTestCompiler(t)
	in := testInput(t, `{"m":{"k":[1,{"x":"y"}]},"n":1e400}`)
	before, digest, value := in.Arguments.String(), in.Arguments.Digest(), in.Arguments.Value()
	ps := c.CompilePolicies([]PolicySpec{
		pre("a", 0, rule("r", `arguments.m.k.size() == 2 && arguments.m.k[1].x == "y" && arguments.n > 0.0`, Ask, "")),
		pre("b", 1, rule("r", `arguments.map(k, k).size() == 2 && {"m": 1}.m == 1 && arguments.m.k + [3] == [1, {"x": "y"}, 3]`, Ask, "")),
	})
	if d := PreExecute(ps, in); d.Verdict != Ask {
		t.Fatalf("policies did not see the arguments: %+v", d)
	}
	if in.Arguments.String() != before || in.Arguments.Digest() != digest {
		t.Errorf("canonical bytes changed")
	}
	if diff := cmp.Diff(value, in.Arguments.Value()); diff != "" {
		t.Errorf("value changed (-before +after):\n%s", diff)
	}
}

// TestCompilePoliciesCache: equal specs share compiled policies; any change of content,
// including one made by the caller to slices it passed before, compiles afresh.
func TestCompilePoliciesCache(t *testing.T) {
	c := newTestCompiler(t)
	specs := func() []PolicySpec {
		return []PolicySpec{
			{Name: "a", Stage: StagePreExecute, Order: 1, Tools: []string{"grep"},
				Rules: []Rule{{Name: "r", Expression: `arguments.x == 1`, Verdict: Deny}}},
			{Name: "b", Stage: StageGuard, Rules: []Rule{{Name: "r", Expression: `true`, Verdict: Ask}}},
		}
	}
	first := c.CompilePolicies(specs())
	again := c.CompilePolicies(specs())
	if len(again) != 2 || again[0] != first[0] || again[1] != first[1] {
		t.Fatalf("equal specs compiled again")
	}
	again[0] = nil // the caller's slice is its own
	if third := c.CompilePolicies(specs()); third[0] != first[0] {
		t.Fatalf("the cached set was changed through a returned slice")
	}
	in := Input{Tool: ToolInfo{Name: "grep"}, Arguments: mustFreeze(t, `{"x":1}`)}
	for _, change := range []func(s []PolicySpec){
		func(s []PolicySpec) { s[0].Rules[0].Expression = `arguments.x == 2` },
		func(s []PolicySpec) { s[0].Rules[0].Verdict = Allow },
		func(s []PolicySpec) { s[0].Tools[0] = "other" },
		func(s []PolicySpec) { s[0].Order = 3; s[1].Order = 2 },
		func(s []PolicySpec) { s[1].ApprovalWindow = time.Minute },
	} {
		s := specs()
		c.CompilePolicies(s) // cached under the original content ...
		change(s)            // ... which the caller then changes in place
		got := c.CompilePolicies(s)
		if got[0] == first[0] && got[1] == first[1] {
			t.Errorf("changed specs got the cached policies")
		}
		fresh, err := NewCompiler(CompilerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(PreExecute(fresh.CompilePolicies(s), in), PreExecute(got, in)); diff != "" {
			t.Errorf("cached compile differs from a fresh one (-fresh +cached):\n%s", diff)
		}
	}
}
