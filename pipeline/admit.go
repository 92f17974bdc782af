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
	"errors"
	"time"
)

// AdmitInput is everything the pure admission stages need for one call.
type AdmitInput struct {
	// Arguments are the raw arguments as the caller sent them.
	Arguments []byte
	// Freeze bounds the arguments; zero fields take the defaults.
	Freeze FreezeOptions
	// Schema is the resolved tool's compiled parameters schema; nil accepts any object.
	Schema *Schema
	// Tool and Call are what policies see as tool and call.
	Tool ToolInfo
	Call CallInfo
	// Policies may be of any stage; Admit uses the PreExecute and Guard ones.
	Policies []*Policy
	// Guards are decisions of checks made outside the pipeline (for example NotASubject
	// from Index.IsSubject); they are folded into the Guard stage and can only lower.
	Guards []Decision
	// Now, when set, times the stages into Admission.Times (for tracing); nil: untimed.
	Now func() time.Time
}

// Interval is when a stage ran; zero when it was not timed or not reached.
type Interval struct{ Start, End time.Time }

// AdmitTimes are the intervals of the stages Admit ran (AdmitInput.Now).
type AdmitTimes struct {
	Freeze, Validate, PreExecute, Guard Interval
}

// Admission holds the verdict of every admission stage, so that the reconciler can
// write all of them in one status write. A stage that was not reached has a zero
// Decision (Evaluated() == false).
type Admission struct {
	// Frozen is the frozen arguments; nil when freezing failed.
	Frozen *Frozen
	// Freeze is stage 1 (condition ArgumentsFrozen).
	Freeze Decision
	// Validate is stage 2 (condition ArgumentsValid), with its violations.
	Validate   Decision
	Validation Validation
	// PreExecute is stage 3 (condition Admitted).
	PreExecute Decision
	// Guard is stage 4 (condition Guarded): the pre-execute verdict lowered by guards;
	// not evaluated when PreExecute already denied.
	Guard Decision
	// Final is the outcome of admission: Allow (create the Job), Ask (park the call
	// with Final.ApprovalWindow, zero meaning the Tool's or the default window) or Deny
	// (terminal, with the deciding stage's reason).
	Final Decision
	// Times are the stages' intervals when AdmitInput.Now was set.
	Times AdmitTimes
}

// Admit runs freeze → validate → pre-execute policies → guards in one pass. A failing
// stage stops the pass: no policy sees arguments that did not freeze or validate.
func Admit(in AdmitInput) Admission {
	now := in.Now
	if now == nil {
		now = func() time.Time { return time.Time{} }
	}
	var a Admission
	t := now()
	f, err := Freeze(in.Arguments, in.Freeze)
	a.Times.Freeze = Interval{t, now()}
	if err != nil {
		a.Freeze = freezeDenial(err)
		a.Final = a.Freeze
		return a
	}
	a.Frozen = f
	a.Freeze = Decision{Verdict: Allow, Reason: ReasonFrozen, Message: "arguments frozen as " + f.Digest()}
	t = a.Times.Freeze.End
	a.Validate, a.Validation = Validate(in.Schema, f)
	a.Times.Validate = Interval{t, now()}
	if a.Validate.Verdict != Allow {
		a.Final = a.Validate
		return a
	}
	t = a.Times.Validate.End
	act := newActivation(Input{Tool: in.Tool, Call: in.Call, Arguments: f})
	a.PreExecute = preExecute(in.Policies, act)
	a.Times.PreExecute = Interval{t, now()}
	if a.PreExecute.Verdict == Deny {
		a.Final = a.PreExecute // guards could only keep it
		return a
	}
	t = a.Times.PreExecute.End
	a.Guard = guard(a.PreExecute, in.Policies, act, in.Guards)
	a.Times.Guard = Interval{t, now()}
	a.Final = a.Guard
	return a
}

func freezeDenial(err error) Decision {
	var fe *FreezeError
	if errors.As(err, &fe) {
		d := deny(fe.Reason, fe.Msg)
		d.Feedback = fe.Feedback
		return d
	}
	return deny(ReasonArgumentsNotObject, err.Error())
}
