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

// Verdict is a point of the permission lattice Allow > Ask > Deny. The string values are
// the API's.
type Verdict string

// The verdicts, from most to least permissive.
const (
	// Allow lets the call pass on to the next stage.
	Allow Verdict = "Allow"
	// Ask parks the call until a person approves or denies it.
	Ask Verdict = "Ask"
	// Deny stops the call; it is terminal.
	Deny Verdict = "Deny"
)

// rank orders verdicts; anything unknown (including "") ranks as Deny so that a
// malformed verdict fails closed.
func (v Verdict) rank() int {
	switch v {
	case Allow:
		return 2
	case Ask:
		return 1
	default:
		return 0
	}
}

// Valid reports whether v is one of Allow, Ask, Deny.
func (v Verdict) Valid() bool { return v == Allow || v == Ask || v == Deny }

// Lower returns the lower (less permissive) of two verdicts: the lattice meet. An unknown
// verdict counts as Deny. Lower is commutative, associative and idempotent, so folding any
// permutation of verdicts with it gives the same minimum, and once Deny is reached no
// later input can lift it.
func Lower(current, next Verdict) Verdict {
	if next.rank() < current.rank() {
		current = next
	}
	if !current.Valid() {
		return Deny
	}
	return current
}

// lowerDecision folds next into current: the less permissive decision wins; on equal
// verdicts the earlier one is kept, except that Ask windows combine to the shortest.
func lowerDecision(current, next Decision) Decision {
	switch {
	case !current.Evaluated():
		return next
	case next.Verdict.rank() < current.Verdict.rank():
		if next.Verdict == Ask {
			next.ApprovalWindow = shortestWindow(current.ApprovalWindow, next.ApprovalWindow)
		}
		return next
	case current.Verdict == Ask && next.Verdict == Ask:
		current.ApprovalWindow = shortestWindow(current.ApprovalWindow, next.ApprovalWindow)
	}
	return current
}

// Guard runs the Guard stage: starting from the verdict admitted so far (the pre-execute
// Decision), it folds in every Guard-stage policy that applies to the tool and every
// external guard decision (for example NotASubject from Index.IsSubject), keeping the
// minimum. Guards can only lower the verdict; a Deny in current is returned unchanged.
func Guard(current Decision, policies []*Policy, in Input, external ...Decision) Decision {
	return guard(current, policies, newActivation(in), external)
}

func guard(current Decision, policies []*Policy, act *activation, external []Decision) Decision {
	if current.Verdict == Deny {
		return current
	}
	out := current
	for _, ext := range external {
		if ext.Evaluated() {
			out = lowerDecision(out, ext)
		}
	}
	var buf [8]*Policy
	for _, p := range sortedForStage(buf[:0], policies, StageGuard, act.in.Tool.Name) {
		if out.Verdict == Deny {
			break
		}
		d := p.evalVerdict(act)
		if d.Verdict == Deny && d.Reason == ReasonPolicyDenied {
			d.Reason = ReasonGuardDenied
		}
		out = lowerDecision(out, d)
	}
	if !out.Verdict.Valid() {
		return deny(ReasonGuardDenied, "guard produced an unknown verdict")
	}
	return out
}
