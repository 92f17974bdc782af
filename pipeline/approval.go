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
	"time"
)

// DefaultApprovalWindow applies when neither policy nor Tool sets a window.
const DefaultApprovalWindow = time.Hour

// ApprovalDecision is what an approver answered.
type ApprovalDecision string

// Approval decisions.
const (
	DecisionApprove ApprovalDecision = "Approve"
	DecisionDeny    ApprovalDecision = "Deny"
)

// Parked describes a call waiting for approval.
type Parked struct {
	// ArgsDigest is the digest of the call's frozen arguments.
	ArgsDigest string
	// ParkedAt is when the call entered AwaitingApproval.
	ParkedAt time.Time
	// Window is the approval window; zero or negative means DefaultApprovalWindow.
	Window time.Duration
	// Requester is the identity that made the call.
	Requester string
}

// Approval is a person's answer to a parked call.
type Approval struct {
	Decision ApprovalDecision
	// ArgsDigest is the digest of the arguments the approver saw.
	ArgsDigest string
	Approver   string
	Reason     string
	// CreatedAt is when the answer was given; zero means "now". An answer given within
	// the window counts even if the operator sees it later.
	CreatedAt time.Time
}

// Deadline returns when the approval window of p closes.
func (p Parked) Deadline() time.Time {
	w := p.Window
	if w <= 0 {
		w = DefaultApprovalWindow
	}
	return p.ParkedAt.Add(w)
}

// DecideApproval decides a parked call at time now. With no approval and the window
// open it returns Ask (ReasonAwaitingApproval) and the time left to wait. A
// self-approval is ignored: the call keeps waiting (Ask, ReasonSelfApproval) or times
// out. Otherwise the wait is zero and the verdict final: Allow (ReasonApproved) only for
// an Approve from someone other than the requester, given in time, for exactly the
// frozen arguments; Deny for a refusal (ApprovalDenied, even with another digest:
// refusing only lowers), a digest mismatch (ApprovalDigestMismatch, a refusal), an
// approval without an approver or with an unknown decision (ApprovalDenied), or the
// window passing (ApprovalTimeout).
func DecideApproval(p Parked, a *Approval, now time.Time) (Decision, time.Duration) {
	deadline := p.Deadline()
	at := now
	if a != nil && !a.CreatedAt.IsZero() {
		at = a.CreatedAt
	}
	switch {
	case a == nil || (a.Decision == DecisionApprove && a.ArgsDigest == p.ArgsDigest && a.Approver == p.Requester):
		if !now.Before(deadline) {
			return deny(ReasonApprovalTimeout, "no approval arrived within the approval window"), 0
		}
		if a != nil {
			return Decision{Verdict: Ask, Reason: ReasonSelfApproval,
				Message: "a call cannot be approved by its own requester; still waiting for an approval"}, deadline.Sub(now)
		}
		return Decision{Verdict: Ask, Reason: ReasonAwaitingApproval, Message: "waiting for an approval"}, deadline.Sub(now)
	case a.Decision == DecisionDeny:
		return deny(ReasonApprovalDenied, refusal(a)), 0
	case a.Decision != DecisionApprove:
		return deny(ReasonApprovalDenied, fmt.Sprintf("approval decision %q is not Approve or Deny", a.Decision)), 0
	case a.ArgsDigest != p.ArgsDigest:
		return deny(ReasonApprovalDigestMismatch, "the approval is for different arguments than the call's"), 0
	case a.Approver == "":
		return deny(ReasonApprovalDenied, "the approval names no approver"), 0
	case !at.Before(deadline):
		return deny(ReasonApprovalTimeout, "the approval arrived after the approval window closed"), 0
	}
	return Decision{Verdict: Allow, Reason: ReasonApproved, Message: fmt.Sprintf("approved by %s", a.Approver)}, 0
}

func refusal(a *Approval) string {
	msg := "the call was denied"
	if a.Approver != "" {
		msg += " by " + a.Approver
	}
	if a.Reason != "" {
		msg += ": " + a.Reason
	}
	return msg
}
