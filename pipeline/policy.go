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
	"cmp"
	"fmt"
	"hash/maphash"
	"slices"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// Stage is the pipeline stage a policy belongs to.
type Stage string

// Policy stages.
const (
	// StagePreExecute policies decide admission (stage 3, the waterfall).
	StagePreExecute Stage = "PreExecute"
	// StageGuard policies may only lower the admitted verdict (stage 4).
	StageGuard Stage = "Guard"
	// StagePostExecute policies accept, block or redact results (stage 6).
	StagePostExecute Stage = "PostExecute"
)

// Action is what a PostExecute rule does with a result.
type Action string

// PostExecute actions.
const (
	// ActionAccept passes the result on to the next policy.
	ActionAccept Action = "Accept"
	// ActionBlock replaces the result with an isError carrying the rule's message, as
	// feedback for the model, and stops.
	ActionBlock Action = "Block"
	// ActionRedact replaces the content with the value of the rule's Replace expression
	// (any JSON value), or with the string "[redacted]" when Replace is empty.
	ActionRedact Action = "Redact"
)

// PolicySpec is the pipeline's view of one ToolPolicy.
type PolicySpec struct {
	// Name identifies the policy in messages and breaks ties of Order.
	Name string
	// Stage selects where the policy runs.
	Stage Stage
	// Order sorts policies of a stage (ascending, then by Name).
	Order int
	// Tools lists the model-facing tool names the policy applies to; empty means all.
	Tools []string
	// Rules are evaluated in order, each true rule applying its verdict or action (see
	// PreExecute and PostExecute).
	Rules []Rule
	// ApprovalWindow is the window of an Ask from this policy; zero means the default.
	ApprovalWindow time.Duration
}

// Rule is one CEL rule. Expression is a bool over tool, arguments and call (plus result
// for PostExecute); when true, the rule's Verdict (PreExecute, Guard) or Action
// (PostExecute) applies.
type Rule struct {
	Name       string
	Expression string
	// Verdict is Allow, Ask or Deny (PreExecute and Guard).
	Verdict Verdict
	// Action is Accept, Block or Redact (PostExecute).
	Action Action
	// Replace is a CEL expression yielding the new content (Redact).
	Replace string
	// Message is the human text: the Deny/Ask message, or the model feedback of Block.
	Message string
}

// Policy is a compiled PolicySpec. Compile errors are kept, not returned: a broken
// policy denies every call it applies to (fail closed) and Err tells the policy's owner.
type Policy struct {
	spec  PolicySpec      // without Tools and Rules, which tools and rules hold
	tools map[string]bool // nil: every tool
	rules []compiledRule
	err   error
}

type compiledRule struct {
	Rule
	when    *program
	replace *program
}

// CompilePolicy compiles every rule of spec (programs are cached by expression). The
// reconciler calls it for every call, so it keeps only what evaluation needs: the tool
// names as a set and each rule (copied, with its programs); spec's slices are not kept.
func (c *Compiler) CompilePolicy(spec PolicySpec) *Policy {
	p := new(Policy)
	c.compilePolicy(p, spec, make([]compiledRule, 0, len(spec.Rules)))
	return p
}

// compilePolicy compiles spec into p, appending its rules to rules (empty, with room for
// them).
func (c *Compiler) compilePolicy(p *Policy, spec PolicySpec, rules []compiledRule) {
	*p = Policy{spec: spec}
	p.spec.Tools, p.spec.Rules = nil, nil
	if len(spec.Tools) > 0 {
		p.tools = make(map[string]bool, len(spec.Tools))
		for _, t := range spec.Tools {
			p.tools[t] = true
		}
	}
	if err := checkStage(spec.Stage); err != nil {
		p.err = err
		return
	}
	p.rules = rules
	for _, r := range spec.Rules {
		cr, err := c.compileRule(spec.Stage, r)
		if err != nil {
			p.err = fmt.Errorf("rule %q: %w", r.Name, err)
			return
		}
		p.rules = append(p.rules, cr)
	}
}

// CompilePolicies compiles each spec; see CompilePolicy. The reconciler calls it for
// every call with the namespace's policies, which rarely change, so compiled sets are
// cached by content (a Policy is immutable): a hit costs a hash and a comparison of the
// specs, and a fresh slice of the shared policies.
func (c *Compiler) CompilePolicies(specs []PolicySpec) []*Policy {
	key := hashPolicySpecs(c.seed, specs)
	if e, ok := c.policySets.get(key); ok && policySpecsEqual(e.specs, specs) {
		return slices.Clone(e.policies)
	}
	out := c.compilePolicies(specs)
	c.policySets.put(key, policySet{specs: clonePolicySpecs(specs), policies: out})
	return slices.Clone(out)
}

// policySet is a cached CompilePolicies outcome with (a copy of) its input.
type policySet struct {
	specs    []PolicySpec
	policies []*Policy
}

func hashPolicySpecs(seed maphash.Seed, specs []PolicySpec) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, s := range specs {
		h.WriteString(s.Name)
		h.WriteByte(0)
		h.WriteString(string(s.Stage))
		h.WriteByte(0)
		for _, t := range s.Tools {
			h.WriteString(t)
			h.WriteByte(0)
		}
		h.WriteByte(1)
		for _, r := range s.Rules {
			h.WriteString(r.Name)
			h.WriteByte(0)
			h.WriteString(r.Expression)
			h.WriteByte(0)
		}
		h.WriteByte(1)
	}
	return h.Sum64()
}

// policySpecsEqual compares every field (the hash covers only some).
func policySpecsEqual(a, b []PolicySpec) bool {
	return slices.EqualFunc(a, b, func(x, y PolicySpec) bool {
		return x.Name == y.Name && x.Stage == y.Stage && x.Order == y.Order &&
			x.ApprovalWindow == y.ApprovalWindow && slices.Equal(x.Tools, y.Tools) && slices.Equal(x.Rules, y.Rules)
	})
}

func clonePolicySpecs(specs []PolicySpec) []PolicySpec {
	out := slices.Clone(specs)
	for i := range out {
		out[i].Tools = slices.Clone(out[i].Tools)
		out[i].Rules = slices.Clone(out[i].Rules)
	}
	return out
}

// compilePolicies compiles specs with the policies and their rules allocated together.
func (c *Compiler) compilePolicies(specs []PolicySpec) []*Policy {
	n := 0
	for _, s := range specs {
		n += len(s.Rules)
	}
	out := make([]*Policy, len(specs))
	ps := make([]Policy, len(specs))
	rules := make([]compiledRule, n)
	for i, s := range specs {
		k := len(s.Rules)
		c.compilePolicy(&ps[i], s, rules[:0:k])
		rules = rules[k:]
		out[i] = &ps[i]
	}
	return out
}

func checkStage(s Stage) error {
	switch s {
	case StagePreExecute, StageGuard, StagePostExecute:
		return nil
	}
	return fmt.Errorf("unknown stage %q", s)
}

func (c *Compiler) compileRule(stage Stage, r Rule) (compiledRule, error) {
	cr := compiledRule{Rule: r}
	env := envAdmission
	if stage == StagePostExecute {
		env = envResults
		if err := checkAction(r); err != nil {
			return cr, err
		}
	} else if !r.Verdict.Valid() {
		return cr, fmt.Errorf("verdict %q is not Allow, Ask or Deny", r.Verdict)
	}
	var err error
	if cr.when, err = c.program(env, r.Expression, cel.BoolType); err != nil {
		return cr, err
	}
	if r.Replace != "" {
		if cr.replace, err = c.program(env, r.Replace, cel.DynType); err != nil {
			return cr, fmt.Errorf("replace: %w", err)
		}
	}
	return cr, nil
}

func checkAction(r Rule) error {
	switch r.Action {
	case ActionAccept, ActionBlock, ActionRedact:
		return nil
	}
	return fmt.Errorf("action %q is not Accept, Block or Redact", r.Action)
}

// Name returns the policy's name.
func (p *Policy) Name() string { return p.spec.Name }

// Stage returns the policy's stage.
func (p *Policy) Stage() Stage { return p.spec.Stage }

// Err returns the compile error, if any (the policy then denies whatever it applies to).
func (p *Policy) Err() error { return p.err }

// AppliesTo reports whether the policy selects the tool name.
func (p *Policy) AppliesTo(tool string) bool { return len(p.tools) == 0 || p.tools[tool] }

// sortedForStage returns the policies of a stage that apply to tool, by Order then Name.
// A policy with an unknown stage counts as PreExecute, where its error denies (fail
// closed rather than silently never applying).
//
// The result is appended to out, which callers keep on their stack for the usual handful
// of policies.
func sortedForStage(out, policies []*Policy, stage Stage, tool string) []*Policy {
	for _, p := range policies {
		if p == nil || !p.AppliesTo(tool) {
			continue
		}
		if p.spec.Stage == stage || (stage == StagePreExecute && checkStage(p.spec.Stage) != nil) {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b *Policy) int {
		if c := cmp.Compare(a.spec.Order, b.spec.Order); c != 0 {
			return c
		}
		return cmp.Compare(a.spec.Name, b.spec.Name)
	})
	return out
}

// evalVerdict runs a PreExecute or Guard policy: its rules continue the waterfall in
// order (a true Allow passes on, a true Ask is recorded, a true Deny stops), so the
// policy's verdict is the minimum of its true rules, Allow when none is true. Any error
// is a Deny with ReasonPolicyError.
func (p *Policy) evalVerdict(act *activation) Decision {
	if p.err != nil {
		return p.policyError("", p.err)
	}
	out := Decision{Verdict: Allow, Reason: ReasonPolicyAllowed, Policy: p.spec.Name}
	for _, r := range p.rules {
		hit, err := evalBool(r.when, act)
		if err != nil {
			return p.policyError(r.Name, err)
		}
		if hit {
			if out = lowerDecision(out, p.ruleDecision(r)); out.Verdict == Deny {
				break
			}
		}
	}
	return out
}

func (p *Policy) ruleDecision(r compiledRule) Decision {
	d := Decision{Verdict: r.Verdict, Policy: p.spec.Name, Rule: r.Name, Message: r.Message}
	switch r.Verdict {
	case Allow:
		d.Reason = ReasonPolicyAllowed
	case Ask:
		d.Reason, d.ApprovalWindow = ReasonAwaitingApproval, p.spec.ApprovalWindow
	default:
		d.Reason = ReasonPolicyDenied
	}
	if d.Message == "" {
		d.Message = fmt.Sprintf("policy %q rule %q decided %s", p.spec.Name, r.Name, r.Verdict)
	}
	return d
}

func (p *Policy) policyError(rule string, err error) Decision {
	msg := fmt.Sprintf("policy %q failed, denying: %v", p.spec.Name, err)
	if rule != "" {
		msg = fmt.Sprintf("policy %q rule %q failed, denying: %v", p.spec.Name, rule, err)
	}
	return Decision{Verdict: Deny, Reason: ReasonPolicyError, Message: msg, Policy: p.spec.Name, Rule: rule}
}

// evalBool evaluates a bool program; a non-bool result is an error.
func evalBool(prg *program, act *activation) (bool, error) {
	out, err := prg.eval(act)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("expression yielded %s, want bool", out.Type().TypeName())
	}
	return bool(b), nil
}

// Input is what CEL expressions see of a call: variables tool, arguments and call.
type Input struct {
	Tool ToolInfo
	Call CallInfo
	// Arguments are the frozen arguments; nil binds an empty object.
	Arguments *Frozen
}

// ToolInfo is the CEL variable tool: {name, scope, annotations, egress}.
type ToolInfo struct {
	Name        string
	Scope       string
	Annotations map[string]string
	// Egress is the tool's sandbox.egress.allow (tool.egress, a list of {host, port}):
	// a policy can ask for approval of tools that reach a given host.
	Egress []HostPort
	// Credentials are the Secret keys the tool's body is given (tool.credentials, a list
	// of {name, secret, key, as}): names only, never a value, so a platform can ask for
	// approval of tools that hold a given token.
	Credentials []Credential
}

// Credential is one entry of tool.credentials: the env var or secret file name the body
// sees (Name), the Secret and key it comes from, and As: "env" or "file"; or, As "proxy",
// one the egress proxy adds to the body's requests to Name ("host:port").
type Credential struct {
	Name   string
	Secret string
	Key    string
	As     string
}

// HostPort is one entry of tool.egress.
type HostPort struct {
	Host string
	Port int
}

// CallInfo is the CEL variable call: {namespace, session, requester, requesterGroups,
// labels}. Requester and RequesterGroups are what the API server authenticated (stamped by
// the toolgate-requester admission policy).
type CallInfo struct {
	Namespace       string
	Session         string
	Requester       string
	RequesterGroups []string
	Labels          map[string]string
}

// PreExecute runs the pre-execute waterfall over the PreExecute policies that apply to
// the tool, ordered by Order then Name, and the rules of each in list order. A true
// Allow rule passes on (an Allow never overrides anything: permission only decreases);
// the first true Deny stops with its message; a true Ask is recorded and evaluation
// continues (a later Deny still wins). With several Asks the first one's message is
// kept and the shortest non-zero approval window applies (the most cautious). No
// applicable policy or no true rule means Allow.
func PreExecute(policies []*Policy, in Input) Decision {
	return preExecute(policies, newActivation(in))
}

func preExecute(policies []*Policy, act *activation) Decision {
	out := allow("no policy denied the call")
	var buf [8]*Policy
	for _, p := range sortedForStage(buf[:0], policies, StagePreExecute, act.in.Tool.Name) {
		out = lowerDecision(out, p.evalVerdict(act))
		if out.Verdict == Deny {
			break
		}
	}
	return out
}

// shortestWindow returns the smaller positive duration; zero means unset.
func shortestWindow(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return max(b, 0)
	case b <= 0:
		return a
	}
	return min(a, b)
}
