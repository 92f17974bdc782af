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
	"maps"
)

// Model-facing texts of post-execute failures. They say what happened to the result and
// never which policy or rule did it (that goes to the Decision, for status).
const (
	redactedContent   = "[redacted]"
	blockedFeedback   = "the tool's result was blocked by policy"
	uncheckedFeedback = "the tool's result could not be checked by policy and was withheld"
	uncheckedSchema   = "the tool's result could not be checked against its output schema and was withheld"
)

// Withhold is post-execute failing closed when it cannot run at all: the policies could not
// be read in time or evaluated on the admitted arguments (ReasonPolicyError), or the output
// schema does not compile (ReasonOutputSchemaInvalid). The result becomes an isError
// result whose content is a generic sentence for the model; detail (which may name
// internals) goes to the Decision only, for status.
func Withhold(r Result, reason Reason, detail string) (Result, Decision) {
	feedback := uncheckedFeedback
	if reason == ReasonOutputSchemaInvalid {
		feedback = uncheckedSchema
	}
	r.Meta = maps.Clone(r.Meta)
	return blocked(r, reason, feedback), deny(reason, detail)
}

// PostExecute runs stage 6 on a normalised result: the PostExecute policies that apply
// to the tool, by Order then Name, and their rules in list order; each rule whose
// expression is true (variables tool, arguments, call and result {content, isError})
// applies its action:
//   - Accept passes the result on unchanged;
//   - Block replaces it with an isError result whose content is the rule's message (or a
//     generic sentence), reason ResultBlocked, and stops;
//   - Redact sets the content to the value of the Replace expression (or
//     "[redacted]"); later rules and policies see the new content.
//
// A policy error blocks the result (fail closed, reason PolicyError). Then, if the result
// is not an error and output is non-nil, its content is validated against the output
// schema; a violation gives an isError result with reason OutputSchemaViolation.
// The Decision is Allow (ResultAccepted or ResultRedacted) or Deny.
func PostExecute(policies []*Policy, in Input, r Result, output *Schema) (Result, Decision) {
	r.Meta = maps.Clone(r.Meta)
	act := newActivation(in)
	var buf [8]*Policy
	for _, p := range sortedForStage(buf[:0], policies, StagePostExecute, act.in.Tool.Name) {
		next, d, stop := p.evalResult(act, r)
		if stop {
			return next, d
		}
		r = next
	}
	if output != nil && !r.IsError {
		if val := output.ValidateValue(r.Content); !val.Valid() {
			msg := "the tool's output does not match its output schema: " + summarize(val)
			return blocked(r, ReasonOutputSchemaViolation, msg), deny(ReasonOutputSchemaViolation, msg)
		}
	}
	if r.Meta[MetaRedacted] == "true" {
		return r, Decision{Verdict: Allow, Reason: ReasonResultRedacted, Message: "the result was redacted by policy"}
	}
	return r, Decision{Verdict: Allow, Reason: ReasonResultAccepted, Message: "the result was accepted"}
}

// evalResult applies one policy; stop is true when the result is final (Block or error).
func (p *Policy) evalResult(act *activation, r Result) (Result, Decision, bool) {
	if p.err != nil {
		d := p.policyError("", p.err)
		return blocked(r, ReasonPolicyError, uncheckedFeedback), d, true
	}
	for _, rule := range p.rules {
		ra := act.withResult(r)
		hit, err := evalBool(rule.when, ra)
		if err != nil {
			d := p.policyError(rule.Name, err)
			return blocked(r, ReasonPolicyError, uncheckedFeedback), d, true
		}
		if !hit {
			continue
		}
		var d Decision
		var stop bool
		if r, d, stop = p.apply(rule, ra, r); stop {
			return r, d, true
		}
	}
	return r, Decision{}, false
}

func (p *Policy) apply(rule compiledRule, ra *activation, r Result) (Result, Decision, bool) {
	switch rule.Action {
	case ActionBlock:
		feedback := rule.Message
		if feedback == "" {
			feedback = blockedFeedback
		}
		d := Decision{Verdict: Deny, Reason: ReasonResultBlocked, Policy: p.spec.Name, Rule: rule.Name,
			Message: fmt.Sprintf("policy %q rule %q blocked the result", p.spec.Name, rule.Name)}
		return blocked(r, ReasonResultBlocked, feedback), d, true
	case ActionRedact:
		content, err := replacement(rule, ra)
		if err != nil {
			return blocked(r, ReasonPolicyError, uncheckedFeedback), p.policyError(rule.Name, err), true
		}
		r.Content = content
		r.Meta = withMeta(r.Meta, MetaRedacted, "true")
		return r, Decision{}, false
	}
	return r, Decision{}, false // Accept
}

func replacement(rule compiledRule, ra *activation) (any, error) {
	if rule.replace == nil {
		return redactedContent, nil
	}
	out, err := rule.replace.eval(ra)
	if err != nil {
		return nil, err
	}
	return celToJSON(out, 0)
}

// blocked turns r into an isError result carrying msg as content for the model.
func blocked(r Result, reason Reason, msg string) Result {
	return Result{IsError: true, Content: msg, Error: msg, Reason: reason, Meta: r.Meta}
}

func withMeta(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}
