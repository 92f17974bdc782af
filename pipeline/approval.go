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
	// CallUID is the call's metadata.uid: an approval answers this one call, not an earlier
	// or later call of the same name.
	CallUID string
	// ArgsDigest is the digest of the call's frozen arguments.
	ArgsDigest string
	// ParkedAt is when the call entered AwaitingApproval (the operator's clock; read back
	// from status it is truncated to whole seconds).
	ParkedAt time.Time
	// CallCreatedAt is the call's creationTimestamp: the API server's clock, the one that
	// also dates approvals, in whole seconds; zero when unknown.
	CallCreatedAt time.Time
	// Window is the approval window; zero or negative means DefaultApprovalWindow.
	Window time.Duration
	// Requester is the identity that made the call.
	Requester string
}

// Approval is a person's answer to a parked call.
type Approval struct {
	// CallUID is the uid of the call the approver was shown (spec.callUID).
	CallUID  string
	Decision ApprovalDecision
	// ArgsDigest is the digest of the arguments the approver saw.
	ArgsDigest string
	Approver   string
	Reason     string
	// CreatedAt is when the answer was given: its creationTimestamp, on the API server's
	// clock, truncated to whole seconds; zero means "now". An answer given within the window
	// counts even if the operator sees it later.
	CreatedAt time.Time
	// ConsumedBy is the uid of the call the approval already decided (its status), if any.
	ConsumedBy string
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
// open it returns Ask (ReasonAwaitingApproval) and the time left to wait. An approval that
// is not an answer to this call is ignored, whatever it decided: the call keeps waiting
// (Ask) or times out. Such are an approval for another call (ApprovalCallMismatch: its
// callUID is not the call's uid — an earlier call of the same name — or names no call), one
// that already decided another call (ApprovalAlreadyConsumed), one created before the call
// was parked (ApprovalStale) and a self-approval (SelfApproval). Otherwise the wait is zero
// and the verdict final: Allow (ReasonApproved) only for an Approve from someone other than
// the requester, given in time, for exactly the frozen arguments; Deny for a refusal
// (ApprovalDenied, even with another digest: refusing only lowers), a digest mismatch
// (ApprovalDigestMismatch, a refusal), an approval without an approver or with an unknown
// decision (ApprovalDenied), or the window passing (ApprovalTimeout).
func DecideApproval(p Parked, a *Approval, now time.Time) (Decision, time.Duration) {
	deadline := p.Deadline()
	ignored, ok := IgnoredApproval(p, a)
	if a == nil {
		ignored, ok = Decision{Verdict: Ask, Reason: ReasonAwaitingApproval, Message: "waiting for an approval"}, true
	}
	if ok {
		if !now.Before(deadline) {
			return deny(ReasonApprovalTimeout, "no approval arrived within the approval window"), 0
		}
		return ignored, deadline.Sub(now)
	}
	at := now
	if !a.CreatedAt.IsZero() {
		at = a.CreatedAt
	}
	switch {
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

// IgnoredApproval reports whether a is not an answer to the parked call p (see
// DecideApproval), with the Ask decision that says why; false for no approval and for an
// answer, whatever it decides. It holds whether or not the window is still open: the
// approval is refused for that reason even when the call times out.
func IgnoredApproval(p Parked, a *Approval) (Decision, bool) {
	const waiting = "; still waiting for an approval"
	ask := func(r Reason, msg string) (Decision, bool) {
		return Decision{Verdict: Ask, Reason: r, Message: msg + waiting}, true
	}
	switch {
	case a == nil:
		return Decision{}, false
	case a.CallUID == "":
		return ask(ReasonApprovalCallMismatch, "the approval names no call (spec.callUID): it is not an answer to this call")
	case a.CallUID != p.CallUID:
		return ask(ReasonApprovalCallMismatch, fmt.Sprintf("the approval answers call %s, not this call (%s): it is not an answer to this call", a.CallUID, p.CallUID))
	case a.ConsumedBy != "" && a.ConsumedBy != p.CallUID:
		return ask(ReasonApprovalAlreadyConsumed, fmt.Sprintf("the approval already decided call %s: it answers one call, once", a.ConsumedBy))
	case createdBefore(a.CreatedAt, p.ParkedAt):
		return ask(ReasonApprovalStale, staleness(a, "parked", p.ParkedAt))
	case createdBefore(a.CreatedAt, p.CallCreatedAt):
		// The operator's clock may differ from the API server's; against the call's own
		// creationTimestamp (the same clock) an older approval is stale whatever the skew.
		return ask(ReasonApprovalStale, staleness(a, "created", p.CallCreatedAt))
	case a.Decision == DecisionApprove && a.ArgsDigest == p.ArgsDigest && a.Approver == p.Requester:
		return Decision{Verdict: Ask, Reason: ReasonSelfApproval,
			Message: "a call cannot be approved by its own requester" + waiting}, true
	}
	return Decision{}, false
}

// createdBefore reports whether an approval whose creationTimestamp is created was certainly
// given before t. A creationTimestamp is truncated to whole seconds: the approval was given
// at some instant of [created, created+1s). It predates t for certain only when even the end
// of that second is not after t. An approval created in the same second as t is therefore not
// stale (it cannot be told apart; a replay is caught by the call's uid, not by time). When t
// is itself a truncated timestamp (read back from status) this is created < t, both whole
// seconds, and still never refuses an approval given after the instant t stands for.
func createdBefore(created, t time.Time) bool {
	return !created.IsZero() && !t.IsZero() && !created.Add(time.Second).After(t)
}

func staleness(a *Approval, event string, t time.Time) string {
	return fmt.Sprintf("the approval was created at %s, before the call was %s at %s: it cannot answer what it was not asked",
		a.CreatedAt.UTC().Format(time.RFC3339), event, t.UTC().Truncate(time.Second).Format(time.RFC3339))
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
