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

package e2e

import (
	"fmt"
	"math/rand/v2"
	"time"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/chaos/check"
)

// The chaos run's own tools, next to the examples: one that fails and is retried once, and
// one whose calls must be approved within 8 s (nobody answers some of them).
const (
	chaosRetryTool = "e2e-chaos-retry"
	chaosAskTool   = "e2e-chaos-ask"
	chaosAskWindow = 8 * time.Second
	// chaosToolTimeout replaces the example tools' timeouts (10–20 s) for the run, sleep's
	// 5 s excepted (its calls are meant to time out): on this 2-core machine at load 15+
	// a tool Pod has taken more than 10 s from its Job's creation to the body's exit (the
	// Job's activeDeadlineSeconds counts the Pod's start), so a scripted success ended
	// DeadlineExceeded, which is Kubernetes doing as told, not what the run is about.
	chaosToolTimeout = 60 * time.Second
)

// chaosRetimed are the example tools whose timeout the run raises to chaosToolTimeout.
var chaosRetimed = []string{"echo", "sh", "read-file", "large", "whoami", "oom"}

func chaosTools() []*toolgatev1alpha1.Tool {
	return []*toolgatev1alpha1.Tool{
		toolgatetest.MakeTool(chaosRetryTool, demoNS).Image(toolImage).
			Command("/bin/busybox", "sh", "-c", "exit 3").RunnerInImage("").
			Timeout(chaosToolTimeout).Retry(2, toolgatev1alpha1.ReasonNonZeroExit).Obj(),
		toolgatetest.MakeTool(chaosAskTool, demoNS).Image(toolImage).Command("/tools/echo").
			RunnerInImage("").Timeout(chaosToolTimeout).ApprovalWindow(chaosAskWindow).Obj(),
	}
}

// chaosAskPolicy asks a person for every call of chaosAskTool.
func chaosAskPolicy() *toolgatev1alpha1.ToolPolicy {
	return toolgatetest.MakeToolPolicy("e2e-chaos-ask", demoNS).Stage(toolgatev1alpha1.StagePreExecute).
		Tools(chaosAskTool).ApprovalWindow(chaosAskWindow).
		VerdictRule("ask", "true", toolgatev1alpha1.VerdictAsk).Obj()
}

// chaosCall is one scripted call of the run.
type chaosCall struct {
	Name    string
	Tool    string
	Scope   string
	Session string
	Args    map[string]any
	Expect  check.Expectation
}

// scenario makes the call for the i-th slot; weights below.
type scenario struct {
	name   string
	weight int
	make   func(i int) chaosCall
}

func succeed(tool string, args map[string]any) chaosCall {
	return chaosCall{Tool: tool, Scope: demoScope, Args: args,
		Expect: check.Expectation{Phase: toolgatev1alpha1.PhaseSucceeded, Reasons: []string{toolgatev1alpha1.ReasonSucceeded}}}
}

func end(tool string, args map[string]any, phase toolgatev1alpha1.ToolCallPhase, mustNotRun bool, reasons ...string) chaosCall {
	return chaosCall{Tool: tool, Scope: demoScope, Args: args,
		Expect: check.Expectation{Phase: phase, Reasons: reasons, MustNotRun: mustNotRun}}
}

// chaosScenarios is the call mix: the example tools succeeding, failing (isError result,
// OOM, timeout), refused (guard, schema), approved, denied and left unanswered, a retried
// failure, and sessions where an unsafe call is a barrier.
var chaosScenarios = []scenario{
	{"echo", 6, func(i int) chaosCall { return succeed("echo", map[string]any{"message": fmt.Sprintf("chaos %d", i)}) }},
	{"large", 2, func(int) chaosCall { return succeed("large", map[string]any{"kib": 8}) }},
	{"whoami", 1, func(int) chaosCall { return succeed("whoami", map[string]any{}) }},
	{"read-file", 1, func(int) chaosCall { return succeed("read_file", map[string]any{"path": ""}) }},
	{"sh-exit3", 2, func(int) chaosCall {
		return end("sh", map[string]any{"command": "exit 3"}, toolgatev1alpha1.PhaseFailed, false, toolgatev1alpha1.ReasonToolError)
	}},
	{"timeout", 1, func(int) chaosCall {
		return end("sleep", map[string]any{"seconds": 300}, toolgatev1alpha1.PhaseFailed, false, toolgatev1alpha1.ReasonDeadlineExceeded)
	}},
	{"oom", 1, func(int) chaosCall {
		// OOMKilled, or on this cgroup v1 node sometimes a plain exit 137 (see oom spec).
		return end("oom", map[string]any{"mib": 256}, toolgatev1alpha1.PhaseFailed, false,
			toolgatev1alpha1.ReasonOOMKilled, toolgatev1alpha1.ReasonNonZeroExit)
	}},
	{"guard-deny", 1, func(int) chaosCall {
		return end("sh", map[string]any{"command": "rm -rf /tmp/x"}, toolgatev1alpha1.PhaseDenied, true, toolgatev1alpha1.ReasonGuardDenied)
	}},
	{"schema", 1, func(int) chaosCall {
		return end("sleep", map[string]any{"seconds": "thirty"}, toolgatev1alpha1.PhaseFailed, true, toolgatev1alpha1.ReasonSchemaViolation)
	}},
	{"approve", 2, func(i int) chaosCall {
		c := succeed("sh", map[string]any{"command": fmt.Sprintf("echo approved %d: ping", i)})
		c.Expect.Approval = check.Approve
		return c
	}},
	{"deny", 1, func(i int) chaosCall {
		c := end("sh", map[string]any{"command": fmt.Sprintf("echo denied %d: ping", i)}, toolgatev1alpha1.PhaseDenied, true,
			toolgatev1alpha1.ReasonApprovalDenied)
		c.Expect.Approval = check.Deny
		return c
	}},
	{"unanswered", 1, func(i int) chaosCall {
		c := end(chaosAskTool, map[string]any{"message": fmt.Sprint(i)}, toolgatev1alpha1.PhaseDenied, true,
			toolgatev1alpha1.ReasonApprovalTimeout)
		c.Scope, c.Expect.Approval = "", check.Unanswered
		return c
	}},
	{"retry", 1, func(int) chaosCall {
		c := end(chaosRetryTool, map[string]any{}, toolgatev1alpha1.PhaseFailed, false, toolgatev1alpha1.ReasonNonZeroExit)
		c.Scope, c.Expect.MinAttempts, c.Expect.MaxAttempts = "", 2, 2
		return c
	}},
}

// chaosPlan is n calls named prefix-NNN, drawn from the mix by seed; every 10th slot starts
// a session of three (safe echo, unsafe sh, safe echo) instead.
func chaosPlan(prefix string, n int, seed uint64) []chaosCall {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	total := 0
	for _, s := range chaosScenarios {
		total += s.weight
	}
	calls := make([]chaosCall, 0, n)
	for i := 0; len(calls) < n; i++ {
		if i%10 == 9 && n-len(calls) >= 3 {
			session := fmt.Sprintf("%s-s%d", prefix, i)
			for j, c := range []chaosCall{
				succeed("echo", map[string]any{"message": fmt.Sprintf("session %d a", i)}),
				succeed("sh", map[string]any{"command": fmt.Sprintf("echo session %d b", i)}),
				succeed("echo", map[string]any{"message": fmt.Sprintf("session %d c", i)}),
			} {
				c.Session, c.Expect.Scenario = session, []string{"session-safe", "session-unsafe", "session-safe"}[j]
				calls = append(calls, c)
			}
			continue
		}
		pick := rng.IntN(total)
		for _, s := range chaosScenarios {
			if pick < s.weight {
				c := s.make(i)
				c.Expect.Scenario = s.name
				calls = append(calls, c)
				break
			}
			pick -= s.weight
		}
	}
	for i := range calls {
		calls[i].Name = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return calls
}
