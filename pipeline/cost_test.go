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
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/toolgate/toolgate/pipeline/internal/canonjson"
)

// costExpressions cover the functions of the admission and result environments, cheap
// and expensive, with sizes taken from the inputs and computed ones.
var costExpressions = []string{
	`arguments.path.startsWith("/etc")`,
	`has(arguments.limit) && arguments.limit > 10000`,
	`call.requester == "" || call.labels.?blocked.orValue("") == "true"`,
	`tool.name == "grep" && tool.annotations.?risk.orValue("") != "high"`,
	`arguments.path.contains("..") || arguments.path.endsWith(".key")`,
	`arguments.path.matches("^/(etc|root)/.*$")`,
	`arguments.s.lowerAscii().upperAscii().reverse().trim().size() > 3`,
	`arguments.s.replace("a", "bb").size() > arguments.s.size()`,
	`arguments.s.split("a").size() > 2`,
	`arguments.s.split("a").join("-").size() > 0`,
	`arguments.s.indexOf("ab") >= 0 || arguments.s.lastIndexOf("b") > 1`,
	`arguments.s.size() > 2 && arguments.s.substring(1, 2) == "a" && arguments.s.charAt(0) == "b"`,
	`arguments.s + arguments.s + arguments.s == arguments.path`,
	`"%s-%d".format([arguments.s, arguments.l.size()]).size() > 0`,
	`strings.quote(arguments.s).size() > 0`,
	`arguments.l.all(x, x > 0)`,
	`arguments.l.exists(x, x == 7)`,
	`arguments.l.exists_one(x, x == 7)`,
	`arguments.l.map(x, x * 2).filter(y, y > 10).size() > 1`,
	`arguments.l.all(x, arguments.l.all(y, x <= y || x > y))`,
	`arguments.l.map(x, arguments.l.map(y, x + y)).size() > 0`,
	`arguments.ls.all(s, s.startsWith("a"))`,
	`arguments.ls.exists(s, arguments.ls.exists(t, s + t == "ab"))`,
	`7 in arguments.l || "x" in arguments.ls || "k" in arguments.m`,
	`arguments.m.all(k, arguments.m[k] != "")`,
	`arguments.m.exists(k, k.contains(arguments.s))`,
	`sets.contains(arguments.l, [1, 2]) || sets.intersects(arguments.ls, ["a"]) || sets.equivalent(arguments.l, arguments.l)`,
	`math.greatest(arguments.l) > 3 && math.least(arguments.l) < 100`,
	`arguments.l + arguments.l == arguments.l`,
	`[arguments.s, arguments.path].all(x, x.size() < 100000)`,
	`{"a": arguments.s}.a == arguments.s`,
	`string(arguments.l.size()) + arguments.s != ""`,
	`arguments.nested.all(row, row.all(x, x > 0))`,
	`arguments.nested.map(row, row.size()).exists(n, n > 3)`,
	`arguments.objs.all(o, o.name.size() < 50 && has(o.size))`,
	`arguments.objs.filter(o, o.name.matches("f.*")).size() > 0`,
	`call.labels.all(k, call.labels[k].size() < 64)`,
	`arguments.s.matches(arguments.path)`,
	`arguments.s.contains(arguments.path)`,
	`arguments.path.split("/").exists(p, arguments.s.contains(p))`,
}

// randomCostArgs builds arguments with strings, lists and maps of random sizes up to
// about n, for the expressions above.
func randomCostArgs(r *rand.Rand, n int) map[string]any {
	str := func() string {
		var b strings.Builder
		for range r.IntN(n + 1) {
			b.WriteString([]string{"a", "b", "é", "/"}[r.IntN(4)])
		}
		return b.String()
	}
	l := make([]any, r.IntN(n+1))
	for i := range l {
		l[i] = json.Number(fmt.Sprint(r.IntN(20)))
	}
	ls := make([]any, r.IntN(n/4+1))
	for i := range ls {
		ls[i] = []string{"", "a", "b", "ab", "é/"}[r.IntN(5)]
	}
	m := map[string]any{}
	for i := range r.IntN(n/4 + 1) {
		m[fmt.Sprint("k", i)] = str()
	}
	nested := make([]any, r.IntN(n/8+1))
	for i := range nested {
		row := make([]any, r.IntN(n/8+1))
		for j := range row {
			row[j] = json.Number(fmt.Sprint(r.IntN(5)))
		}
		nested[i] = row
	}
	objs := make([]any, r.IntN(n/4+1))
	for i := range objs {
		objs[i] = map[string]any{"name": fmt.Sprint("f", i), "size": json.Number(fmt.Sprint(i))}
	}
	return map[string]any{"path": "/" + str(), "s": str(), "limit": json.Number(fmt.Sprint(r.IntN(20000))),
		"l": l, "ls": ls, "m": m, "nested": nested, "objs": objs}
}

// TestUntrackedEvaluationStaysUnderTheLimit checks the premise of program.plain over
// many inputs: whenever an evaluation is allowed to run without cost tracking, the
// tracked program measures a cost within limit/costMargin (so the limit could not have
// been reached), and both programs give the same outcome.
func TestUntrackedEvaluationStaysUnderTheLimit(t *testing.T) {
	for _, limit := range []uint64{DefaultCostLimit, 1000} {
		c, err := NewCompiler(CompilerOptions{CostLimit: limit})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, limit))
		untracked, maxCost := 0, uint64(0)
		for _, expr := range costExpressions {
			p, err := c.program(envAdmission, expr, cel.BoolType)
			if err != nil {
				t.Fatalf("%s: %v", expr, err)
			}
			for i := range 40 {
				n := []int{0, 1, 2, 4, 8, 16, 32, 64, 128, 256}[i%10]
				args, err := canonjson.AppendValue(nil, randomCostArgs(r, n), 0)
				if err != nil {
					t.Fatal(err)
				}
				act := newActivation(Input{
					Tool:      ToolInfo{Name: "grep", Annotations: map[string]string{"risk": strings.Repeat("h", r.IntN(n+1))}},
					Call:      CallInfo{Requester: "alice", Labels: map[string]string{"blocked": "false", "team": strings.Repeat("t", r.IntN(n+1))}},
					Arguments: mustFreeze(t, string(args)),
				})
				out, det, err := p.tracked.Eval(act)
				if p.plain == nil || act.sizeBound() > p.maxSize {
					continue
				}
				untracked++
				cost := *det.ActualCost()
				maxCost = max(maxCost, cost)
				if cost > limit/costMargin {
					t.Errorf("limit %d, %s over inputs of size ≤ %d (maxSize %d): tracked cost %d, over the untracked budget %d",
						limit, expr, act.sizeBound(), p.maxSize, cost, limit/costMargin)
				}
				pout, perr := p.eval(act)
				if (err == nil) != (perr == nil) || (err == nil && out.Equal(pout) != types.True) {
					t.Errorf("%s: tracked (%v, %v) and untracked (%v, %v) differ", expr, out, err, pout, perr)
				}
			}
		}
		t.Logf("limit %d: %d untracked evaluations, the costliest %d (budget %d)", limit, untracked, maxCost, limit/costMargin)
		if untracked < 300 {
			t.Errorf("limit %d: only %d untracked evaluations; the test does not exercise them", limit, untracked)
		}
	}
}

// TestCostLimitStillApplies: inputs too large for an expression's untracked program are
// evaluated with the limit.
func TestCostLimitStillApplies(t *testing.T) {
	c := newTestCompiler(t)
	p, err := c.program(envAdmission, `arguments.l.all(x, arguments.l.all(y, x == y))`, cel.BoolType)
	if err != nil {
		t.Fatal(err)
	}
	small := newActivation(Input{Arguments: mustFreeze(t, `{"l":[1,1]}`)})
	if ok, err := evalBool(p, small); err != nil || !ok {
		t.Fatalf("small input: %v, %v", ok, err)
	}
	if p.plain == nil || small.sizeBound() > p.maxSize {
		t.Fatalf("small input not evaluated untracked (maxSize %d, bound %d)", p.maxSize, small.sizeBound())
	}
	big := newActivation(Input{Arguments: mustFreeze(t, `{"l":[`+strings.Repeat("1,", 399)+`1]}`)})
	if _, err := evalBool(p, big); err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Fatalf("big input: got %v, want the cost limit", err)
	}
}
