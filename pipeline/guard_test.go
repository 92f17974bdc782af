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
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/quick"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLower(t *testing.T) {
	tests := []struct {
		a, b, want Verdict
	}{
		{Allow, Allow, Allow}, {Allow, Ask, Ask}, {Allow, Deny, Deny},
		{Ask, Allow, Ask}, {Ask, Ask, Ask}, {Ask, Deny, Deny},
		{Deny, Allow, Deny}, {Deny, Ask, Deny}, {Deny, Deny, Deny},
		{Allow, "Maybe", Deny}, {"", Allow, Deny}, {"allow", Allow, Deny},
	}
	for _, tc := range tests {
		if got := Lower(tc.a, tc.b); got != tc.want {
			t.Errorf("Lower(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestGuard(t *testing.T) {
	c := newTestCompiler(t)
	guardSpec := func(name string, v Verdict, window time.Duration) PolicySpec {
		return PolicySpec{Name: name, Stage: StageGuard, ApprovalWindow: window, Rules: []Rule{rule("r", `true`, v, name)}}
	}
	allowed := allow("no policy denied the call")
	tests := []struct {
		name     string
		current  Decision
		specs    []PolicySpec
		external []Decision
		want     Decision
	}{
		{"no guards keep allow", allowed, nil, nil, allowed},
		{"guard allow cannot raise ask", Decision{Verdict: Ask, Reason: ReasonAwaitingApproval}, []PolicySpec{guardSpec("g", Allow, 0)}, nil,
			Decision{Verdict: Ask, Reason: ReasonAwaitingApproval}},
		{"guard lowers to ask", allowed, []PolicySpec{guardSpec("g", Ask, time.Minute)}, nil,
			Decision{Verdict: Ask, Reason: ReasonAwaitingApproval, Message: "g", Policy: "g", Rule: "r", ApprovalWindow: time.Minute}},
		{"guard deny has GuardDenied", allowed, []PolicySpec{guardSpec("g", Deny, 0)}, nil,
			Decision{Verdict: Deny, Reason: ReasonGuardDenied, Message: "g", Policy: "g", Rule: "r"}},
		{"deny is final", deny(ReasonPolicyDenied, "pre"), []PolicySpec{guardSpec("g", Allow, 0)}, []Decision{allow("x")},
			deny(ReasonPolicyDenied, "pre")},
		{"external NotASubject", allowed, nil, []Decision{deny(ReasonNotASubject, "bob is not a subject")},
			deny(ReasonNotASubject, "bob is not a subject")},
		{"asks combine to shortest window", Decision{Verdict: Ask, ApprovalWindow: time.Hour}, []PolicySpec{guardSpec("g", Ask, time.Minute)}, nil,
			Decision{Verdict: Ask, ApprovalWindow: time.Minute}},
		{"pre-execute policies are not guards", allowed, []PolicySpec{pre("p", 0, rule("r", `true`, Deny, ""))}, nil, allowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Guard(tc.current, c.CompilePolicies(tc.specs), testInput(t, `{}`), tc.external...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

var verdicts = []Verdict{Allow, Ask, Deny}

// TestVerdictMonotonicity builds random sets of PreExecute policies, Guard policies and
// external guards, evaluates them through Admit under many orderings (slice order and
// Order values permuted) and checks that the final verdict is always the minimum of
// all verdicts, whatever the order.
func TestVerdictMonotonicity(t *testing.T) {
	c := newTestCompiler(t)
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 42))
		n := 1 + r.IntN(6)
		specs := make([]PolicySpec, n)
		want := Allow
		for i := range specs {
			v := verdicts[r.IntN(3)]
			want = Lower(want, v)
			stage := []Stage{StagePreExecute, StageGuard}[r.IntN(2)]
			specs[i] = PolicySpec{Name: fmt.Sprintf("p%d", i), Stage: stage, Rules: []Rule{rule("r", `true`, v, "")}}
		}
		var external []Decision
		for range r.IntN(3) {
			v := verdicts[r.IntN(3)]
			want = Lower(want, v)
			external = append(external, Decision{Verdict: v, Reason: ReasonPolicyAllowed})
		}
		for perm := range 10 {
			order := r.Perm(n)
			shuffled := make([]PolicySpec, n)
			for i, j := range order {
				shuffled[i] = specs[j]
				shuffled[i].Order = r.IntN(3)
			}
			r.Shuffle(len(external), func(i, j int) { external[i], external[j] = external[j], external[i] })
			a := Admit(AdmitInput{Arguments: []byte(`{}`), Policies: c.CompilePolicies(shuffled), Guards: external})
			if a.Final.Verdict != want {
				t.Fatalf("seed %d perm %d: final %s, want minimum %s (specs %+v, guards %+v)",
					seed, perm, a.Final.Verdict, want, shuffled, external)
			}
			if a.Guard.Evaluated() && Lower(a.PreExecute.Verdict, a.Guard.Verdict) != a.Guard.Verdict {
				t.Fatalf("seed %d: guard %s raised pre-execute %s", seed, a.Guard.Verdict, a.PreExecute.Verdict)
			}
		}
	}
}

// TestDenyNeverLifted: once Deny is recorded, no sequence of later verdicts (Lower) and
// no guard input (Guard) changes it.
func TestDenyNeverLifted(t *testing.T) {
	c := newTestCompiler(t)
	raising := c.CompilePolicies([]PolicySpec{{Name: "g", Stage: StageGuard, Rules: []Rule{rule("r", `true`, Allow, "")}}})
	prop := func(later []uint8, start uint8) bool {
		v := Lower(verdicts[int(start)%3], Deny)
		for _, x := range later {
			v = Lower(v, verdicts[int(x)%3])
		}
		d := Guard(deny(ReasonPolicyDenied, "denied"), raising, Input{}, allow("x"), Decision{Verdict: Ask})
		return v == Deny && d.Verdict == Deny && d.Reason == ReasonPolicyDenied
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 500, Rand: newQuickRand()}); err != nil {
		t.Error(err)
	}
	// Lower is a meet: commutative, associative, idempotent.
	meet := func(a, b, c uint8) bool {
		x, y, z := verdicts[int(a)%3], verdicts[int(b)%3], verdicts[int(c)%3]
		return Lower(x, y) == Lower(y, x) && Lower(Lower(x, y), z) == Lower(x, Lower(y, z)) && Lower(x, x) == x
	}
	if err := quick.Check(meet, &quick.Config{MaxCount: 200, Rand: newQuickRand()}); err != nil {
		t.Error(err)
	}
}
