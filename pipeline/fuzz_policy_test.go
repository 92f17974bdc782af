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
	"strconv"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
)

// policySeeds are rule expressions as policies write them (docs, examples, tests), for the
// fuzzer to mutate.
var policySeeds = []string{
	`true`, `arguments.path.startsWith("/etc")`, `has(arguments.limit) && arguments.limit > 10000`,
	`call.requester == "" || call.labels.?blocked.orValue("") == "true"`,
	`has(arguments.command) && arguments.command.matches(r"(^|[\s;&|(` + "`" + `/])rm\s+(-\S*\s+)*(-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)(\s|$)")`,
	`tool.annotations.?risk.orValue("low") == "high" && call.session != ""`,
	`arguments.map(k, k).size() == 2 && {"m": 1}.m == 1 && arguments.m.k + [3] == [1, {"x": "y"}, 3]`,
	`arguments.l.all(x, arguments.l.all(y, x == y))`, `arguments.n > 0.0 && arguments.n < 1e300`,
	`sets.contains(["a", "b"], [tool.name]) || math.greatest([1, 2]) == 2`,
	`"x".repeat(10).size() == 10 && arguments.s.lowerAscii().split("/").size() > 2`,
	`call == {"namespace": "ns", "session": "", "requester": "alice", "labels": {}}`,
	`tool.scope in ["team", ""] && size(tool.annotations) < 3 && "risk" in tool.annotations`,
	`arguments.nope == 1`, `arguments.s`, `1 / 0 == 1`, `int(arguments.n) == 3`, `type(arguments.n) == int && arguments.n + 1 == 4`,
}

// FuzzPolicy evaluates random rule expressions over random arguments and call
// attributes, differentially: toolgate's evaluation (arguments read in place through
// jsonAdapter, tool and call as records, the untracked program for small inputs, the
// program cache) must decide what plain cel-go decides over ordinary Go maps with
// runtime cost tracking. A rule that is true denies, false allows, and anything else —
// a compile error, a non-bool result, a runtime error, the cost limit — denies with
// ReasonPolicyError (fail closed), never allows. A mismatch is re-evaluated a few times,
// since CEL leaves the iteration order of maps unspecified.
func FuzzPolicy(f *testing.F) {
	for i, e := range policySeeds {
		f.Add(e, []byte(`{"path":"/etc/passwd","limit":20000,"command":"rm -rf /","m":{"k":[1,{"x":"y"}]},"n":3,"s":"A/b/c","l":[1,2,3]}`),
			"alice", strconv.Itoa(i), "high")
	}
	f.Add(`arguments.x == 18446744073709551617 || arguments.y == 1.0`, []byte(`{"x":18446744073709551617,"y":1,"z":1e400}`), "", "true", "")
	c, err := NewCompiler(CompilerOptions{CacheSize: 256})
	if err != nil {
		f.Fatal(err)
	}
	direct := directCELEnv(f)
	f.Fuzz(func(t *testing.T, expr string, args []byte, requester, label, risk string) {
		checkPolicy(t, c, direct, expr, policyInput(args, requester, label, risk))
	})
}

// FuzzPolicyGenerated is FuzzPolicy over expressions that parse: the fuzzer's bytes
// choose the productions of a small CEL grammar (genExpr) over the variables, the
// argument keys of the seeds, literals, operators, macros and the extension functions,
// so evaluation, not the parser, is what is explored.
func FuzzPolicyGenerated(f *testing.F) {
	args := []byte(`{"s":"A/b/c","n":3,"d":0.5,"l":[1,2,"x"],"m":{"k":[1,{"x":"y"}]},"b":true,"z":null,"big":18446744073709551617}`)
	for _, g := range []string{"", "\x00", "\x01\x02\x03", "\x05\x07\x00\x01\x09", "\x0a\x0b\x0c\x0d\x0e\x0f\x10", "\xff\xfe\xfd\xfc\xfb\xfa"} {
		f.Add([]byte(g), args, "alice", "true", "high")
	}
	f.Add([]byte("\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee"), []byte(`{"s":"\u00e9\ud83d\ude00","l":[]}`), "", "", "")
	c, err := NewCompiler(CompilerOptions{CacheSize: 256})
	if err != nil {
		f.Fatal(err)
	}
	direct := directCELEnv(f)
	f.Fuzz(func(t *testing.T, prog, args []byte, requester, label, risk string) {
		g := &exprGen{b: prog}
		expr := g.expr(0)
		if _, iss := direct.Parse(expr); iss.Err() != nil {
			t.Fatalf("the generator wrote %q, which does not parse: %v", expr, iss.Err())
		}
		checkPolicy(t, c, direct, expr, policyInput(args, requester, label, risk))
	})
}

func policyInput(args []byte, requester, label, risk string) Input {
	in := Input{Tool: ToolInfo{Name: "t", Scope: "team", Annotations: map[string]string{"risk": risk}},
		Call: CallInfo{Namespace: "ns", Session: label, Requester: requester, Labels: map[string]string{"blocked": label}}}
	if fr, err := Freeze(args, FreezeOptions{MaxBytes: 4 << 10, MaxDepth: 16}); err == nil {
		in.Arguments = fr
	}
	return in
}

// checkPolicy compares toolgate's decision on one Deny rule with plain cel-go's.
func checkPolicy(t *testing.T, c *Compiler, direct *cel.Env, expr string, in Input) {
	t.Helper()
	p := c.CompilePolicy(PolicySpec{Name: "p", Stage: StagePreExecute, Rules: []Rule{{Name: "r", Expression: expr, Verdict: Deny}}})
	got := policyOutcome(t, PreExecute([]*Policy{p}, in))
	if p.Err() != nil && got != "error" {
		t.Fatalf("a policy that does not compile (%v) decided %s", p.Err(), got)
	}
	want := directOutcome(direct, expr, in)
	for i := 0; got != want && i < 8; i++ {
		got, want = policyOutcome(t, PreExecute([]*Policy{p}, in)), directOutcome(direct, expr, in)
	}
	if got != want {
		t.Fatalf("expression %q over %s (tool %+v, call %+v): toolgate %s, cel-go %s (policy error: %v)",
			expr, argsText(in), in.Tool, in.Call, got, want, p.Err())
	}
}

// policyOutcome classifies a PreExecute decision of one Deny rule: true, false or error.
func policyOutcome(t *testing.T, d Decision) string {
	t.Helper()
	if d.Message == "" || d.Policy != "p" && d.Verdict == Deny {
		t.Fatalf("decision without message or policy: %+v", d)
	}
	switch {
	case d.Verdict == Allow:
		return "false"
	case d.Verdict == Deny && d.Reason == ReasonPolicyDenied:
		return "true"
	case d.Verdict == Deny && d.Reason == ReasonPolicyError:
		return "error"
	}
	t.Fatalf("unexpected decision %+v", d)
	return ""
}

// directCELEnv is the environment policy rules run in (the declarations and libraries of
// newEnvs), built from cel-go alone: no custom adapter, activation or cost shortcut, and
// programs without OptOptimize.
func directCELEnv(f *testing.F) *cel.Env {
	env, err := cel.NewEnv(
		cel.Variable(varTool, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varArguments, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varCall, cel.MapType(cel.StringType, cel.DynType)),
		cel.CrossTypeNumericComparisons(true), cel.OptionalTypes(),
		ext.Strings(), ext.Sets(), ext.Math(), cel.ParserExpressionSizeLimit(maxExpressionBytes))
	if err != nil {
		f.Fatal(err)
	}
	return env
}

// directOutcome evaluates expr with plain cel-go over the input as Go maps, numbers
// mapped as documented (an integer literal that fits int64 is an int, any other a
// double).
func directOutcome(env *cel.Env, expr string, in Input) string {
	ast, iss := env.Compile(expr)
	if expr == "" || iss.Err() != nil {
		return "error"
	}
	if out := ast.OutputType(); !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.DynType) {
		return "error"
	}
	prg, err := env.Program(ast, cel.CostLimit(DefaultCostLimit))
	if err != nil {
		return "error"
	}
	var args any = map[string]any{}
	if in.Arguments != nil {
		args = plainJSON(in.Arguments.Value())
	}
	out, _, err := prg.Eval(map[string]any{
		varTool:      map[string]any{"name": in.Tool.Name, "scope": in.Tool.Scope, "annotations": in.Tool.Annotations},
		varCall:      map[string]any{"namespace": in.Call.Namespace, "session": in.Call.Session, "requester": in.Call.Requester, "labels": in.Call.Labels},
		varArguments: args,
	})
	if err != nil {
		return "error"
	}
	switch out {
	case types.True:
		return "true"
	case types.False:
		return "false"
	}
	return "error"
}

// plainJSON turns json.Number into int64 or float64, as the policies see numbers.
func plainJSON(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(string(t), 64)
		return f
	case []any:
		for i, e := range t {
			t[i] = plainJSON(e)
		}
	case map[string]any:
		for k, e := range t {
			t[k] = plainJSON(e)
		}
	}
	return v
}

func argsText(in Input) string {
	if in.Arguments == nil {
		return "{} (arguments did not freeze)"
	}
	return strings.Clone(in.Arguments.String())
}

// exprGen writes a CEL expression chosen by its bytes (zero once they run out, which
// ends the recursion in an atom): every expression it writes parses.
type exprGen struct {
	b     []byte
	i     int
	inVar int // nesting of comprehensions: their variables x0, x1, … are atoms
}

func (g *exprGen) next() int {
	if g.i >= len(g.b) {
		return 0
	}
	g.i++
	return int(g.b[g.i-1])
}

func (g *exprGen) pick(options []string) string { return options[g.next()%len(options)] }

var (
	genKeys  = []string{"s", "n", "d", "l", "m", "b", "z", "big", "nope", "k", "x"}
	genAtoms = []string{"arguments", "call", "tool", "call.requester", "call.session", "call.labels",
		"call.labels.blocked", "tool.annotations", "tool.annotations.risk", "tool.name", "tool.scope",
		"0", "1", "-1", "3", "9223372036854775807", "-9223372036854775808", "1u", "0.5", "1e300", "-0.0", "3.0",
		`""`, `"a"`, `"A/b/c"`, `"é😀"`, `b"x"`, "true", "false", "null", "[]", "{}"}
	genBinary  = []string{"==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "&&", "||", "in"}
	genMethods = []string{"startsWith(%)", "endsWith(%)", "contains(%)", `matches("^[a-z]+$")`, `matches("(")`,
		"size()", "lowerAscii()", "upperAscii()", "split(%)", "replace(%, %)", "trim()", "indexOf(%)",
		"charAt(%)", "substring(%)", "join()", "join(%)", "reverse()"}
	genFuncs = []string{"size(%)", "int(%)", "uint(%)", "double(%)", "string(%)", "bool(%)", "bytes(%)",
		"type(%)", "dyn(%)", "math.greatest(%, %)", "math.least(%)", "math.abs(%)", "math.ceil(%)",
		"sets.contains(%, %)", "sets.intersects(%, %)", "sets.equivalent(%, %)", "strings.quote(%)"}
	genMacros = []string{"all", "exists", "exists_one", "map", "filter"}
)

func (g *exprGen) atom() string {
	n := g.next()
	switch {
	case g.inVar > 0 && n%5 == 0:
		return "x" + strconv.Itoa(n%g.inVar)
	case n%3 == 0:
		return "arguments." + g.pick(genKeys)
	case n%7 == 1:
		return "has(arguments." + g.pick(genKeys) + ")"
	case n%7 == 2:
		return "arguments.?" + g.pick(genKeys) + ".orValue(" + g.pick(genAtoms) + ")"
	}
	return g.pick(genAtoms)
}

// fill replaces each % of form with a generated expression.
func (g *exprGen) fill(form string, depth int) string {
	var sb strings.Builder
	for _, c := range form {
		if c == '%' {
			sb.WriteString(g.expr(depth + 1))
		} else {
			sb.WriteRune(c)
		}
	}
	return sb.String()
}

func (g *exprGen) expr(depth int) string {
	if depth >= 5 || g.i >= len(g.b) {
		return g.atom()
	}
	switch g.next() % 11 {
	case 1:
		return "(" + g.expr(depth+1) + " " + g.pick(genBinary) + " " + g.expr(depth+1) + ")"
	case 2:
		return g.pick([]string{"!", "-"}) + "(" + g.expr(depth+1) + ")"
	case 3:
		return "(" + g.expr(depth+1) + " ? " + g.expr(depth+1) + " : " + g.expr(depth+1) + ")"
	case 4:
		return "(" + g.expr(depth+1) + ")." + g.fill(g.pick(genMethods), depth)
	case 5:
		return g.fill(g.pick(genFuncs), depth)
	case 6:
		v := "x" + strconv.Itoa(g.inVar)
		target, macro := g.expr(depth+1), g.pick(genMacros)
		g.inVar++
		body := g.expr(depth + 1)
		g.inVar--
		return "(" + target + ")." + macro + "(" + v + ", " + body + ")"
	case 7:
		return "[" + g.expr(depth+1) + ", " + g.expr(depth+1) + "]"
	case 8:
		return "{" + g.pick([]string{`"k"`, `"x"`, "1", "true"}) + ": " + g.expr(depth+1) + "}"
	case 9:
		return "(" + g.expr(depth+1) + ")[" + g.expr(depth+1) + "]"
	case 10:
		return "(" + g.expr(depth+1) + ")" + g.pick([]string{".", ".?"}) + g.pick(genKeys)
	}
	return g.atom()
}
