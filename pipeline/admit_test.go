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
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestAdmit(t *testing.T) {
	c := newTestCompiler(t)
	schema := mustSchema(t, c, grepSchema)
	policies := c.CompilePolicies([]PolicySpec{
		pre("no-etc", 0, rule("etc", `has(arguments.path) && arguments.path.startsWith("/etc")`, Deny, "no /etc")),
		{Name: "big", Stage: StagePreExecute, Order: 1, ApprovalWindow: time.Minute,
			Rules: []Rule{rule("limit", `has(arguments.limit) && arguments.limit > 100`, Ask, "large search")}},
		{Name: "night", Stage: StageGuard, Rules: []Rule{rule("bob", `call.requester == "bob"`, Deny, "bob is blocked")}},
	})
	frozenMsg := func(args string) string { return "arguments frozen as " + mustFreeze(t, args).Digest() }
	allowedFreeze := func(args string) Decision {
		return Decision{Verdict: Allow, Reason: ReasonFrozen, Message: frozenMsg(args)}
	}
	valid := Decision{Verdict: Allow, Reason: ReasonValid, Message: "arguments match the tool's schema"}
	passed := allow("no policy denied the call")
	tests := []struct {
		name      string
		args      string
		requester string
		guards    []Decision
		want      Admission
	}{
		{"allowed", `{"pattern":"x"}`, "alice", nil, Admission{
			Freeze: allowedFreeze(`{"pattern":"x"}`), Validate: valid, PreExecute: passed, Guard: passed, Final: passed}},
		{"freeze fails, nothing else runs", `{"pattern":"x","pattern":"y"}`, "alice", nil, Admission{
			Freeze: deny(ReasonArgumentsNotObject, `duplicate key "pattern" (at /pattern)`),
			Final:  deny(ReasonArgumentsNotObject, `duplicate key "pattern" (at /pattern)`)}},
		{"schema violation, no policy runs", `{"path":"/etc"}`, "alice", nil, Admission{
			Freeze:     allowedFreeze(`{"path":"/etc"}`),
			Validate:   deny(ReasonSchemaViolation, "arguments do not match the tool's schema: at /: missing property 'pattern'"),
			Validation: Validation{Violations: []Violation{{Message: "missing property 'pattern'"}}},
			Final:      deny(ReasonSchemaViolation, "arguments do not match the tool's schema: at /: missing property 'pattern'")}},
		{"policy denies", `{"pattern":"x","path":"/etc/shadow"}`, "alice", nil, Admission{
			Freeze: allowedFreeze(`{"pattern":"x","path":"/etc/shadow"}`), Validate: valid,
			PreExecute: Decision{Verdict: Deny, Reason: ReasonPolicyDenied, Message: "no /etc", Policy: "no-etc", Rule: "etc"},
			Final:      Decision{Verdict: Deny, Reason: ReasonPolicyDenied, Message: "no /etc", Policy: "no-etc", Rule: "etc"}}},
		{"ask parks with window", `{"pattern":"x","limit":500}`, "alice", nil, Admission{
			Freeze: allowedFreeze(`{"pattern":"x","limit":500}`), Validate: valid,
			PreExecute: Decision{Verdict: Ask, Reason: ReasonAwaitingApproval, Message: "large search", Policy: "big", Rule: "limit", ApprovalWindow: time.Minute},
			Guard:      Decision{Verdict: Ask, Reason: ReasonAwaitingApproval, Message: "large search", Policy: "big", Rule: "limit", ApprovalWindow: time.Minute},
			Final:      Decision{Verdict: Ask, Reason: ReasonAwaitingApproval, Message: "large search", Policy: "big", Rule: "limit", ApprovalWindow: time.Minute}}},
		{"guard lowers ask to deny", `{"pattern":"x","limit":500}`, "bob", nil, Admission{
			Freeze: allowedFreeze(`{"pattern":"x","limit":500}`), Validate: valid,
			PreExecute: Decision{Verdict: Ask, Reason: ReasonAwaitingApproval, Message: "large search", Policy: "big", Rule: "limit", ApprovalWindow: time.Minute},
			Guard:      Decision{Verdict: Deny, Reason: ReasonGuardDenied, Message: "bob is blocked", Policy: "night", Rule: "bob"},
			Final:      Decision{Verdict: Deny, Reason: ReasonGuardDenied, Message: "bob is blocked", Policy: "night", Rule: "bob"}}},
		{"external guard", `{"pattern":"x"}`, "carol", []Decision{deny(ReasonNotASubject, "carol is not a subject")}, Admission{
			Freeze: allowedFreeze(`{"pattern":"x"}`), Validate: valid, PreExecute: passed,
			Guard: deny(ReasonNotASubject, "carol is not a subject"), Final: deny(ReasonNotASubject, "carol is not a subject")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Admit(AdmitInput{
				Arguments: []byte(tc.args), Schema: schema, Policies: policies, Guards: tc.guards,
				Tool: ToolInfo{Name: "grep"}, Call: CallInfo{Requester: tc.requester},
			})
			if (got.Frozen == nil) != (tc.want.Freeze.Verdict == Deny) {
				t.Errorf("Frozen = %v with freeze verdict %s", got.Frozen, tc.want.Freeze.Verdict)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Admission{}, "Frozen")); diff != "" {
				t.Errorf("admission (-want +got):\n%s", diff)
			}
		})
	}
}

// Arguments over the operator's limit stop the pass; the operator's people read the limit
// in the message, the model only its own size in the feedback (DESIGN rule 4).
func TestAdmitTooLarge(t *testing.T) {
	a := Admit(AdmitInput{Arguments: []byte(`{"a":"` + strings.Repeat("x", 100) + `"}`), Freeze: FreezeOptions{MaxBytes: 50}})
	if a.Final.Reason != ReasonArgumentsTooLarge || a.Validate.Evaluated() || a.PreExecute.Evaluated() || a.Guard.Evaluated() {
		t.Errorf("admission = %+v", a)
	}
	if want := "arguments are 108 bytes, over the limit of 50 bytes"; a.Final.Message != want {
		t.Errorf("message %q, want %q", a.Final.Message, want)
	}
	if want := "arguments are 108 bytes, over the size limit for tool calls"; a.Final.Feedback != want {
		t.Errorf("feedback %q, want %q", a.Final.Feedback, want)
	}
}
