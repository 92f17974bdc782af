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
	parked := Parked{ArgsDigest: "sha256:aa", ParkedAt: t0, Window: 10 * time.Minute, Requester: "alice"}
	approve := func(digest, approver string) *Approval {
		return &Approval{Decision: DecisionApprove, ArgsDigest: digest, Approver: approver}
	}
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
		{"denied with reason", parked, &Approval{Decision: DecisionDeny, ArgsDigest: "sha256:aa", Approver: "bob", Reason: "too risky"}, t0.Add(time.Minute),
			deny(ReasonApprovalDenied, "the call was denied by bob: too risky"), 0},
		{"deny wins even with other digest", parked, &Approval{Decision: DecisionDeny, ArgsDigest: "sha256:zz"}, t0.Add(time.Minute),
			deny(ReasonApprovalDenied, "the call was denied"), 0},
		{"unknown decision", parked, &Approval{Decision: "Perhaps", ArgsDigest: "sha256:aa", Approver: "bob"}, t0.Add(time.Minute),
			deny(ReasonApprovalDenied, `approval decision "Perhaps" is not Approve or Deny`), 0},
		{"approval seen late but given in time", parked,
			&Approval{Decision: DecisionApprove, ArgsDigest: "sha256:aa", Approver: "bob", CreatedAt: t0.Add(9 * time.Minute)}, t0.Add(time.Hour),
			Decision{Verdict: Allow, Reason: ReasonApproved, Message: "approved by bob"}, 0},
		{"approval given after window", parked,
			&Approval{Decision: DecisionApprove, ArgsDigest: "sha256:aa", Approver: "bob", CreatedAt: t0.Add(11 * time.Minute)}, t0.Add(time.Hour),
			deny(ReasonApprovalTimeout, "the approval arrived after the approval window closed"), 0},
		{"undated approval after window", parked, approve("sha256:aa", "bob"), t0.Add(11 * time.Minute),
			deny(ReasonApprovalTimeout, "the approval arrived after the approval window closed"), 0},
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
