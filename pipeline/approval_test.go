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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDecideApproval(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	const uid = "3f1b0c2e-0000-4000-8000-000000000001"
	parked := Parked{CallUID: uid, ArgsDigest: "sha256:aa", ParkedAt: t0, CallCreatedAt: t0, Window: 10 * time.Minute, Requester: "alice"}
	approve := func(digest, approver string) *Approval {
		return &Approval{CallUID: uid, Decision: DecisionApprove, ArgsDigest: digest, Approver: approver}
	}
	// with returns a copy of a changed by set.
	with := func(a *Approval, set func(*Approval)) *Approval {
		c := *a
		set(&c)
		return &c
	}
	created := func(at time.Time) func(*Approval) { return func(a *Approval) { a.CreatedAt = at } }
	// parkedAt is the call parked at a sub-second instant, as the operator's clock has it.
	parkedAt := func(at time.Time) Parked {
		p := parked
		p.ParkedAt, p.CallCreatedAt = at, at.Truncate(time.Second)
		return p
	}
	waiting := func(r Reason, msg string) Decision { return Decision{Verdict: Ask, Reason: r, Message: msg} }
	const stillWaiting = "; still waiting for an approval"
	mismatch := "the approval answers call " + "0b9e0f6a-0000-4000-8000-000000000002" + ", not this call (" + uid + "): it is not an answer to this call" + stillWaiting
	tests := []struct {
		name     string
		parked   Parked
		approval *Approval
		now      time.Time
		want     Decision
		wait     time.Duration
	}{
		{"waiting", parked, nil, t0.Add(4 * time.Minute),
			Decision{Verdict: Ask, Reason: ReasonAwaitingApproval, Message: "waiting for an approval"}, 6 * time.Minute},
		{"timeout exactly at deadline", parked, nil, t0.Add(10 * time.Minute),
			deny(ReasonApprovalTimeout, "no approval arrived within the approval window"), 0},
		{"default window", Parked{ParkedAt: t0}, nil, t0.Add(59 * time.Minute),
			Decision{Verdict: Ask, Reason: ReasonAwaitingApproval, Message: "waiting for an approval"}, time.Minute},
		{"approved", parked, approve("sha256:aa", "bob"), t0.Add(time.Minute),
			Decision{Verdict: Allow, Reason: ReasonApproved, Message: "approved by bob"}, 0},
		{"digest mismatch", parked, approve("sha256:bb", "bob"), t0.Add(time.Minute),
			deny(ReasonApprovalDigestMismatch, "the approval is for different arguments than the call's"), 0},
		{"self approval is ignored", parked, approve("sha256:aa", "alice"), t0.Add(time.Minute),
			Decision{Verdict: Ask, Reason: ReasonSelfApproval, Message: "a call cannot be approved by its own requester; still waiting for an approval"}, 9 * time.Minute},
		{"self approval then timeout", parked, approve("sha256:aa", "alice"), t0.Add(10 * time.Minute),
			deny(ReasonApprovalTimeout, "no approval arrived within the approval window"), 0},
		{"self mismatch is a refusal", parked, approve("sha256:bb", "alice"), t0.Add(time.Minute),
			deny(ReasonApprovalDigestMismatch, "the approval is for different arguments than the call's"), 0},
		{"no approver", parked, approve("sha256:aa", ""), t0.Add(time.Minute),
			deny(ReasonApprovalDenied, "the approval names no approver"), 0},
		{"denied with reason", parked, &Approval{CallUID: uid, Decision: DecisionDeny, ArgsDigest: "sha256:aa", Approver: "bob", Reason: "too risky"}, t0.Add(time.Minute),
			deny(ReasonApprovalDenied, "the call was denied by bob: too risky"), 0},
		{"deny wins even with other digest", parked, &Approval{CallUID: uid, Decision: DecisionDeny, ArgsDigest: "sha256:zz"}, t0.Add(time.Minute),
			deny(ReasonApprovalDenied, "the call was denied"), 0},
		{"unknown decision", parked, &Approval{CallUID: uid, Decision: "Perhaps", ArgsDigest: "sha256:aa", Approver: "bob"}, t0.Add(time.Minute),
			deny(ReasonApprovalDenied, `approval decision "Perhaps" is not Approve or Deny`), 0},
		{"approval seen late but given in time", parked,
			with(approve("sha256:aa", "bob"), created(t0.Add(9*time.Minute))), t0.Add(time.Hour),
			Decision{Verdict: Allow, Reason: ReasonApproved, Message: "approved by bob"}, 0},
		{"approval given after window", parked,
			with(approve("sha256:aa", "bob"), created(t0.Add(11*time.Minute))), t0.Add(time.Hour),
			deny(ReasonApprovalTimeout, "the approval arrived after the approval window closed"), 0},
		{"undated approval after window", parked, approve("sha256:aa", "bob"), t0.Add(11 * time.Minute),
			deny(ReasonApprovalTimeout, "the approval arrived after the approval window closed"), 0},

		// An approval answers one call, named by its uid: one written for an earlier call of
		// the same name (a replay) or naming no call does not count, whatever it decided.
		{"approval for another call is ignored", parked,
			with(approve("sha256:aa", "bob"), func(a *Approval) { a.CallUID = "0b9e0f6a-0000-4000-8000-000000000002" }), t0.Add(time.Minute),
			waiting(ReasonApprovalCallMismatch, mismatch), 9 * time.Minute},
		{"a deny for another call is ignored too", parked,
			&Approval{CallUID: "0b9e0f6a-0000-4000-8000-000000000002", Decision: DecisionDeny, ArgsDigest: "sha256:aa", Approver: "bob"}, t0.Add(time.Minute),
			waiting(ReasonApprovalCallMismatch, mismatch), 9 * time.Minute},
		{"approval naming no call is ignored", parked,
			with(approve("sha256:aa", "bob"), func(a *Approval) { a.CallUID = "" }), t0.Add(time.Minute),
			waiting(ReasonApprovalCallMismatch, "the approval names no call (spec.callUID): it is not an answer to this call"+stillWaiting), 9 * time.Minute},
		{"approval for another call then timeout", parked,
			with(approve("sha256:aa", "bob"), func(a *Approval) { a.CallUID = "0b9e0f6a-0000-4000-8000-000000000002" }), t0.Add(10 * time.Minute),
			deny(ReasonApprovalTimeout, "no approval arrived within the approval window"), 0},
		{"approval consumed by another call is ignored", parked,
			with(approve("sha256:aa", "bob"), func(a *Approval) { a.ConsumedBy = "0b9e0f6a-0000-4000-8000-000000000002" }), t0.Add(time.Minute),
			waiting(ReasonApprovalAlreadyConsumed, "the approval already decided call 0b9e0f6a-0000-4000-8000-000000000002: it answers one call, once"+stillWaiting), 9 * time.Minute},
		{"approval consumed by this call still counts", parked,
			with(approve("sha256:aa", "bob"), func(a *Approval) { a.ConsumedBy = uid }), t0.Add(time.Minute),
			Decision{Verdict: Allow, Reason: ReasonApproved, Message: "approved by bob"}, 0},

		// Stale: creationTimestamps are whole seconds, truncated; an approval created at C
		// was given in [C, C+1s). It is stale only when even C+1s is not after the parking.
		{"approval a second before parking is stale", parkedAt(t0.Add(200 * time.Millisecond)),
			with(approve("sha256:aa", "bob"), created(t0.Add(-time.Second))), t0.Add(time.Minute),
			waiting(ReasonApprovalStale, "the approval was created at 2025-06-01T11:59:59Z, before the call was parked at 2025-06-01T12:00:00Z: it cannot answer what it was not asked"+stillWaiting),
			10*time.Minute - time.Minute + 200*time.Millisecond},
		{"approval in the second of parking counts", parkedAt(t0.Add(700 * time.Millisecond)),
			with(approve("sha256:aa", "bob"), created(t0)), t0.Add(time.Minute),
			Decision{Verdict: Allow, Reason: ReasonApproved, Message: "approved by bob"}, 0},
		{"approval in the second of a truncated parking counts", parked,
			with(approve("sha256:aa", "bob"), created(t0)), t0.Add(time.Minute),
			Decision{Verdict: Allow, Reason: ReasonApproved, Message: "approved by bob"}, 0},
		{"approval older than the call is stale whatever the operator's clock", Parked{CallUID: uid, ArgsDigest: "sha256:aa",
			ParkedAt: t0.Add(-time.Hour), CallCreatedAt: t0, Window: 2 * time.Hour, Requester: "alice"},
			with(approve("sha256:aa", "bob"), created(t0.Add(-2*time.Second))), t0.Add(time.Minute),
			waiting(ReasonApprovalStale, "the approval was created at 2025-06-01T11:59:58Z, before the call was created at 2025-06-01T12:00:00Z: it cannot answer what it was not asked"+stillWaiting),
			time.Hour - time.Minute},
		{"a stale deny is ignored too", parked,
			with(approve("sha256:aa", "bob"), func(a *Approval) { a.Decision, a.CreatedAt = DecisionDeny, t0.Add(-time.Minute) }), t0.Add(time.Minute),
			waiting(ReasonApprovalStale, "the approval was created at 2025-06-01T11:59:00Z, before the call was parked at 2025-06-01T12:00:00Z: it cannot answer what it was not asked"+stillWaiting),
			9 * time.Minute},
		{"a call mismatch is reported before staleness", parked,
			with(approve("sha256:aa", "bob"), func(a *Approval) {
				a.CallUID, a.CreatedAt = "0b9e0f6a-0000-4000-8000-000000000002", t0.Add(-time.Minute)
			}), t0.Add(time.Minute),
			waiting(ReasonApprovalCallMismatch, mismatch), 9 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, wait := DecideApproval(tc.parked, tc.approval, tc.now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			if wait != tc.wait {
				t.Errorf("wait = %v, want %v", wait, tc.wait)
			}
		})
	}
}

func TestIgnoredApproval(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	parked := Parked{CallUID: "new", ArgsDigest: "sha256:aa", ParkedAt: t0, CallCreatedAt: t0, Window: time.Minute, Requester: "alice"}
	tests := []struct {
		name     string
		approval *Approval
		ignored  bool
		reason   Reason
	}{
		{"no approval", nil, false, ""},
		{"an answer", &Approval{CallUID: "new", Decision: DecisionApprove, ArgsDigest: "sha256:aa", Approver: "bob", CreatedAt: t0}, false, ""},
		{"a refusal is an answer", &Approval{CallUID: "new", Decision: DecisionApprove, ArgsDigest: "sha256:bb", Approver: "bob", CreatedAt: t0}, false, ""},
		{"a late answer is an answer", &Approval{CallUID: "new", Decision: DecisionApprove, ArgsDigest: "sha256:aa", Approver: "bob", CreatedAt: t0.Add(time.Hour)}, false, ""},
		{"another call's", &Approval{CallUID: "old", Decision: DecisionApprove, ArgsDigest: "sha256:aa", Approver: "bob", CreatedAt: t0.Add(-time.Hour)}, true, ReasonApprovalCallMismatch},
		{"consumed by another call", &Approval{CallUID: "new", ConsumedBy: "old", Decision: DecisionApprove, ArgsDigest: "sha256:aa", Approver: "bob"}, true, ReasonApprovalAlreadyConsumed},
		{"stale", &Approval{CallUID: "new", Decision: DecisionApprove, ArgsDigest: "sha256:aa", Approver: "bob", CreatedAt: t0.Add(-time.Second)}, true, ReasonApprovalStale},
		{"self", &Approval{CallUID: "new", Decision: DecisionApprove, ArgsDigest: "sha256:aa", Approver: "alice"}, true, ReasonSelfApproval},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, ignored := IgnoredApproval(parked, tc.approval)
			if ignored != tc.ignored || d.Reason != tc.reason {
				t.Errorf("IgnoredApproval = (%s, %v), want (%s, %v)", d.Reason, ignored, tc.reason, tc.ignored)
			}
			if ignored && d.Verdict != Ask {
				t.Errorf("verdict = %s, want Ask", d.Verdict)
			}
		})
	}
}
