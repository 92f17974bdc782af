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
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func post(name string, order int, rules ...Rule) PolicySpec {
	return PolicySpec{Name: name, Stage: StagePostExecute, Order: order, Rules: rules}
}

func act(name, when string, a Action, replace, msg string) Rule {
	return Rule{Name: name, Expression: when, Action: a, Replace: replace, Message: msg}
}

func TestPostExecute(t *testing.T) {
	c := newTestCompiler(t)
	okResult := Result{OK: true, Content: map[string]any{"token": "s3cr3t", "n": json.Number("2")}, Reason: ReasonSucceeded,
		Meta: map[string]string{MetaAttempt: "1"}}
	schema := mustSchema(t, c, `{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`)
	tests := []struct {
		name     string
		specs    []PolicySpec
		output   *Schema
		in       Result
		want     Result
		decision Decision
	}{
		{"no policies accept", nil, nil, okResult, okResult,
			Decision{Verdict: Allow, Reason: ReasonResultAccepted, Message: "the result was accepted"}},
		{"accept passes on", []PolicySpec{post("a", 0, act("r", `true`, ActionAccept, "", ""))}, schema, okResult, okResult,
			Decision{Verdict: Allow, Reason: ReasonResultAccepted, Message: "the result was accepted"}},
		{"block with feedback", []PolicySpec{post("dlp", 0, act("secret", `has(result.content.token)`, ActionBlock, "", "the result contained a credential"))}, nil, okResult,
			Result{IsError: true, Content: "the result contained a credential", Error: "the result contained a credential", Reason: ReasonResultBlocked, Meta: okResult.Meta},
			Decision{Verdict: Deny, Reason: ReasonResultBlocked, Message: `policy "dlp" rule "secret" blocked the result`, Policy: "dlp", Rule: "secret"}},
		{"replace with CEL", []PolicySpec{post("dlp", 0, act("mask", `has(result.content.token)`, ActionRedact, `{"token": "***", "n": result.content.n + 1}`, ""))}, schema, okResult,
			Result{OK: true, Content: map[string]any{"token": "***", "n": json.Number("3")}, Reason: ReasonSucceeded,
				Meta: map[string]string{MetaAttempt: "1", MetaRedacted: "true"}},
			Decision{Verdict: Allow, Reason: ReasonResultRedacted, Message: "the result was redacted by policy"}},
		{"redact without expression", []PolicySpec{post("dlp", 0, act("all", `!result.isError`, ActionRedact, "", ""))}, nil, okResult,
			Result{OK: true, Content: "[redacted]", Reason: ReasonSucceeded, Meta: map[string]string{MetaAttempt: "1", MetaRedacted: "true"}},
			Decision{Verdict: Allow, Reason: ReasonResultRedacted, Message: "the result was redacted by policy"}},
		{"rules apply in order within a policy", []PolicySpec{post("p", 0,
			act("accept", `true`, ActionAccept, "", ""),
			act("mask", `true`, ActionRedact, `"masked"`, ""),
			act("check", `result.content == "masked"`, ActionBlock, "", "saw the masked content"))}, nil, okResult,
			Result{IsError: true, Content: "saw the masked content", Error: "saw the masked content", Reason: ReasonResultBlocked,
				Meta: map[string]string{MetaAttempt: "1", MetaRedacted: "true"}},
			Decision{Verdict: Deny, Reason: ReasonResultBlocked, Message: `policy "p" rule "check" blocked the result`, Policy: "p", Rule: "check"}},
		{"later policy sees replaced content", []PolicySpec{
			post("a", 0, act("mask", `true`, ActionRedact, `"masked"`, "")),
			post("b", 1, act("check", `result.content != "masked"`, ActionBlock, "", "saw original"))}, nil, okResult,
			Result{OK: true, Content: "masked", Reason: ReasonSucceeded, Meta: map[string]string{MetaAttempt: "1", MetaRedacted: "true"}},
			Decision{Verdict: Allow, Reason: ReasonResultRedacted, Message: "the result was redacted by policy"}},
		{"output schema violation", nil, schema, Result{OK: true, Content: map[string]any{"n": "two"}, Reason: ReasonSucceeded},
			Result{IsError: true, Content: "the tool's output does not match its output schema: at /n: got string, want integer",
				Error: "the tool's output does not match its output schema: at /n: got string, want integer", Reason: ReasonOutputSchemaViolation},
			deny(ReasonOutputSchemaViolation, "the tool's output does not match its output schema: at /n: got string, want integer")},
		{"errors are not schema checked", nil, schema, Result{IsError: true, Content: "boom", Error: "boom", Reason: ReasonNonZeroExit},
			Result{IsError: true, Content: "boom", Error: "boom", Reason: ReasonNonZeroExit},
			Decision{Verdict: Allow, Reason: ReasonResultAccepted, Message: "the result was accepted"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, d := PostExecute(c.CompilePolicies(tc.specs), testInput(t, `{}`), tc.in, tc.output)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.decision, d); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPostExecuteFailsClosed: a broken PostExecute policy withholds the result without
// telling the model which policy it was.
func TestPostExecuteFailsClosed(t *testing.T) {
	c := newTestCompiler(t)
	in := Result{OK: true, Content: "secret output", Reason: ReasonSucceeded}
	tests := []struct {
		name string
		spec PolicySpec
	}{
		{"compile error", post("p", 0, act("r", `result.content.`, ActionBlock, "", ""))},
		{"eval error", post("p", 0, act("r", `result.content.missing == 1`, ActionBlock, "", ""))},
		{"replace yields NaN", post("p", 0, act("r", `true`, ActionRedact, `0.0/0.0`, ""))},
		{"replace yields bytes", post("p", 0, act("r", `true`, ActionRedact, `b"x"`, ""))},
		{"bad action", post("p", 0, act("r", `true`, "Shred", "", ""))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, d := PostExecute(c.CompilePolicies([]PolicySpec{tc.spec}), testInput(t, `{}`), in, nil)
			if !got.IsError || got.OK || got.Reason != ReasonPolicyError || got.Content != uncheckedFeedback {
				t.Errorf("result = %+v, want withheld", got)
			}
			if strings.Contains(got.Error, `"p"`) {
				t.Errorf("result names the policy: %q", got.Error)
			}
			if d.Verdict != Deny || d.Reason != ReasonPolicyError || !strings.Contains(d.Message, `policy "p"`) {
				t.Errorf("decision = %+v", d)
			}
		})
	}
}

func TestPostExecuteDoesNotMutateInput(t *testing.T) {
	c := newTestCompiler(t)
	in := Result{OK: true, Content: map[string]any{"a": "b"}, Meta: map[string]string{MetaAttempt: "1"}}
	ps := c.CompilePolicies([]PolicySpec{post("p", 0, act("r", `true`, ActionRedact, "", ""))})
	PostExecute(ps, testInput(t, `{}`), in, nil)
	if diff := cmp.Diff(map[string]string{MetaAttempt: "1"}, in.Meta); diff != "" {
		t.Errorf("input meta changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"a": "b"}, in.Content); diff != "" {
		t.Errorf("input content changed (-want +got):\n%s", diff)
	}
}

// TestWithhold: post-execute that cannot run at all withholds the result, whatever it was,
// with a generic sentence for the model and the detail for status only.
func TestWithhold(t *testing.T) {
	ok := Result{OK: true, Content: "secret output", Reason: ReasonSucceeded, Meta: map[string]string{MetaAttempt: "1"}}
	failed := Result{IsError: true, Content: "secret stderr", Error: "secret stderr", Reason: ReasonNonZeroExit}
	tests := []struct {
		name     string
		in       Result
		reason   Reason
		feedback string
	}{
		{"policies unreadable", ok, ReasonPolicyError, uncheckedFeedback},
		{"policies unreadable, error result", failed, ReasonPolicyError, uncheckedFeedback},
		{"output schema does not compile", ok, ReasonOutputSchemaInvalid, uncheckedSchema},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, d := Withhold(tc.in, tc.reason, "internal detail")
			want := Result{IsError: true, Content: tc.feedback, Error: tc.feedback, Reason: tc.reason, Meta: tc.in.Meta}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(deny(tc.reason, "internal detail"), d); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}
