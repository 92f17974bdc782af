package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	tg "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/chaos/check"
)

// scenario is one kind of call in the mix: its tool (and how the simulated kubelet plays
// it), whether it belongs to a session, how the approver answers, and the expectation the
// checker holds it to.
type scenario struct {
	name    string
	weight  int
	tool    string
	session bool
	// sandbox: a session call in the sandbox scope (ToolScope sessionSandbox): it runs in
	// its session's long-lived Pod, handed over by the session executor.
	sandbox bool
	// scope is the call's ToolScope (the admission scenarios': queuedScope, unservedScope).
	scope  string
	expect check.Expectation
}

// The sandbox scope and its sessions: sandbox calls pick one of sandboxSessions session
// names and one of two requesters at random, so each name is used by both requesters
// (their Pods must stay apart) and every session gets several calls.
const (
	sandboxScope    = "sandbox"
	sandboxSessions = 4
	// agentUser is the second requester of sandbox calls (AdminUser is the first).
	agentUser = "agent"
)

// The admission scopes (docs/bursts.md): queuedScope's calls' Jobs go to the LocalQueue the
// harness's simulated Kueue serves (kueue.go), unservedScope's to one nobody serves, so
// they end NotAdmitted after unservedMaxWait.
const (
	queuedScope     = "queued"
	servedQueue     = "served"
	queuedMaxWait   = 2 * time.Minute
	unservedScope   = "unserved"
	unservedQueue   = "nobody"
	unservedMaxWait = 5 * time.Second
	// admissionTimeout is the timeout of the tools called behind admission: with the
	// operator's deadline grace, below the simulated Kueue's longest hold (kueue.hold), so
	// a timeout that counted from the Job's creation would end those calls DeadlineExceeded.
	admissionTimeout = 2 * time.Second
	// kueueQuota is how many of the served queue's Jobs may run at once.
	kueueQuota = 3
)

// sandboxExpect is a sandbox call's expectation: Succeeded; or, when an operator kill fell
// while it ran, Failed JobDeleted (its attempt PodDeleted: the new process cannot reach
// the Pod, the outcome is unknown and the call is never handed over twice).
func sandboxExpect() check.Expectation {
	e := expect(v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
	e.IfKilled = &check.Ending{Phase: v1alpha1.PhaseFailed, Reasons: []string{v1alpha1.ReasonJobDeleted},
		Executed: "operator: restarted while the call ran in session Pod"} // sessionexec.Observe's words
	return e
}

// largeResult is the stdout of the "large" tool: far over the termination message's
// 4 KiB, so the runner's frame points into the Pod log, which the operator process reads
// from the harness over HTTP.
var largeResult = []byte(`{"rows":"` + string(bytes.Repeat([]byte("x"), 96<<10)) + `"}`)

func expect(phase v1alpha1.ToolCallPhase, reasons ...string) check.Expectation {
	return check.Expectation{Phase: phase, Reasons: reasons}
}

// scenarios is the mix. Weights are per 100 calls.
func scenarios() []scenario {
	denied := func(reason string, a check.Approval) check.Expectation {
		e := expect(v1alpha1.PhaseDenied, reason)
		e.MustNotRun, e.Approval = true, a
		return e
	}
	approved := expect(v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
	approved.Approval = check.Approve
	retried := expect(v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
	retried.MinAttempts, retried.MaxAttempts = 2, 3
	evicted := expect(v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)
	evicted.MinAttempts, evicted.MaxAttempts = 2, 2
	exhausted := expect(v1alpha1.PhaseFailed, v1alpha1.ReasonNonZeroExit)
	exhausted.MinAttempts, exhausted.MaxAttempts = 2, 2
	return []scenario{
		{name: "safe-session", weight: 5, tool: "lookup", session: true, expect: expect(v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)},
		{name: "unsafe-session", weight: 5, tool: "write", session: true, expect: expect(v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)},
		{name: "sandbox-read", weight: 10, tool: "sbread", session: true, sandbox: true, expect: sandboxExpect()},
		{name: "sandbox-write", weight: 9, tool: "sbwrite", session: true, sandbox: true, expect: sandboxExpect()},
		{name: "slow", weight: 5, tool: "slow", expect: expect(v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)},
		{name: "approve", weight: 6, tool: "deploy", expect: approved},
		{name: "deny", weight: 4, tool: "deploy", expect: denied(v1alpha1.ReasonApprovalDenied, check.Deny)},
		{name: "unanswered", weight: 5, tool: "gated", expect: denied(v1alpha1.ReasonApprovalTimeout, check.Unanswered)},
		{name: "policy-deny", weight: 4, tool: "rm", expect: denied(v1alpha1.ReasonPolicyDenied, check.NoApproval)},
		{name: "retry-succeeds", weight: 5, tool: "flaky", expect: retried},
		{name: "evicted-retried", weight: 4, tool: "evicted", expect: evicted},
		{name: "retry-exhausted", weight: 4, tool: "broken", expect: exhausted},
		{name: "fail", weight: 4, tool: "fail", expect: expect(v1alpha1.PhaseFailed, v1alpha1.ReasonNonZeroExit)},
		{name: "timeout", weight: 4, tool: "timeout", expect: expect(v1alpha1.PhaseFailed, v1alpha1.ReasonDeadlineExceeded)},
		// Nobody reports on the hang tool's Pod: the operator's deadline ends it, as
		// DeadlineExceeded when the Pod was seen started, else ImageNeverStarted (the
		// simulated kubelet may not have created it yet after an API server restart).
		{name: "hang", weight: 2, tool: "hang", expect: expect(v1alpha1.PhaseFailed, v1alpha1.ReasonDeadlineExceeded, v1alpha1.ReasonImageNeverStarted)},
		{name: "large", weight: 3, tool: "large", expect: expect(v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)},
		{name: "too-large", weight: 3, tool: "toolarge", expect: expect(v1alpha1.PhaseFailed, v1alpha1.ReasonOutputTooLarge)},
		// Admission (18 %): Jobs created suspended; the simulated Kueue admits the served
		// queue's (the tools run as scripted, their 2 s timeout counted from admission);
		// nobody admits the unserved queue's: NotAdmitted after 5 s, Job deleted, no Pod.
		{name: "queued", weight: 10, tool: "qecho", scope: queuedScope, expect: expect(v1alpha1.PhaseSucceeded, v1alpha1.ReasonSucceeded)},
		{name: "queued-fail", weight: 3, tool: "qfail", scope: queuedScope, expect: expect(v1alpha1.PhaseFailed, v1alpha1.ReasonNonZeroExit)},
		{name: "not-admitted", weight: 5, tool: "qecho", scope: unservedScope, expect: expect(v1alpha1.PhaseFailed, v1alpha1.ReasonNotAdmitted)},
	}
}

// tools are the Tools the scenarios call, and how the kubelet plays them.
func setupTools(ctx context.Context, c client.Client, k *tg.Kubelet, ns string, window time.Duration) error {
	echo := func(name string) *tg.ToolWrapper {
		return tg.MakeTool(name, ns).Image("example/" + name + ":1").Command("/" + name).Timeout(20 * time.Second).
			Parameters(map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}})
	}
	exit1 := tg.Outcome{ExitCode: 1, Stderr: "simulated failure"}
	ok := tg.Outcome{Echo: true, After: 500 * time.Millisecond}
	objs := []client.Object{
		echo("lookup").ConcurrencySafe(true).ReadOnly(true).Obj(),
		echo("write").Obj(),
		echo("slow").Obj(),
		echo("deploy").ApprovalWindow(10 * time.Minute).Obj(),
		echo("gated").ApprovalWindow(window).Obj(),
		echo("rm").Obj(),
		echo("flaky").Retry(3, v1alpha1.ReasonNonZeroExit).Obj(),
		echo("evicted").Retry(2, v1alpha1.ReasonEvicted).Obj(),
		echo("broken").Retry(2, v1alpha1.ReasonNonZeroExit).Obj(),
		echo("fail").Obj(),
		echo("timeout").Obj(),
		tg.MakeTool("hang", ns).Image("example/hang:1").Command("/hang").Timeout(2 * time.Second).Obj(),
		echo("large").Obj(),
		echo("toolarge").MaxOutputBytes(1024).Obj(),
		echo("sbread").ConcurrencySafe(true).ReadOnly(true).Obj(),
		echo("sbwrite").Obj(),
		tg.MakeToolScope(sandboxScope, ns).SessionSandbox(30 * time.Second).Obj(),
		echo("qecho").Timeout(admissionTimeout).Obj(),
		echo("qfail").Timeout(admissionTimeout).Obj(),
		tg.MakeToolScope(queuedScope, ns).Admission(servedQueue, queuedMaxWait).Obj(),
		tg.MakeToolScope(unservedScope, ns).Admission(unservedQueue, unservedMaxWait).Obj(),
		tg.MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).Tools("deploy", "gated").
			VerdictRule("a-person-decides", "true", v1alpha1.VerdictAsk).Obj(),
		tg.MakeToolPolicy("no-rm", ns).Stage(v1alpha1.StagePreExecute).Tools("rm").
			VerdictRule("never", "true", v1alpha1.VerdictDeny).Obj(),
	}
	k.Script("lookup", tg.Outcome{Echo: true})
	k.Script("write", ok)
	k.Script("slow", tg.Outcome{Echo: true, After: 2 * time.Second})
	k.Script("deploy", tg.Outcome{Echo: true})
	k.ScriptAttempts("flaky", exit1, tg.Outcome{Echo: true, After: time.Second})
	k.ScriptAttempts("evicted", tg.Outcome{Evicted: true, After: time.Second}, tg.Outcome{Echo: true})
	k.Script("broken", tg.Outcome{ExitCode: 1, Stderr: "always fails", After: 500 * time.Millisecond})
	k.Script("fail", tg.Outcome{ExitCode: 3, Stderr: "simulated failure", After: time.Second})
	k.Script("timeout", tg.Outcome{DeadlineExceeded: true, After: time.Second})
	k.Script("hang", tg.Outcome{Hold: true})
	k.Script("large", tg.Outcome{Stdout: largeResult, After: 500 * time.Millisecond})
	k.Script("toolarge", tg.Outcome{Stdout: bytes.Repeat([]byte("y"), 4096)})
	k.Script("sbread", tg.Outcome{Echo: true, After: 100 * time.Millisecond})
	k.Script("sbwrite", ok)
	k.Script("qecho", tg.Outcome{Echo: true, After: time.Second})
	k.Script("qfail", tg.Outcome{ExitCode: 3, Stderr: "simulated failure", After: 500 * time.Millisecond})
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	tools := 0
	for _, obj := range objs {
		if _, ok := obj.(*v1alpha1.Tool); ok {
			tools++
		}
	}
	return waitRegistered(ctx, c, ns, tools)
}

// waitRegistered waits until the operator has registered n Tools.
func waitRegistered(ctx context.Context, c client.Client, ns string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		tools := &v1alpha1.ToolList{}
		registered := 0
		if err := c.List(ctx, tools, client.InNamespace(ns)); err == nil {
			for i := range tools.Items {
				if meta.IsStatusConditionTrue(tools.Items[i].Status.Conditions, v1alpha1.ConditionRegistered) {
					registered++
				}
			}
		}
		if registered == n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d Tools registered within a minute", registered, n)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// plannedCall is one call of the run.
type plannedCall struct {
	name, session string
	// requester is the user who creates the call (AdminUser unless a sandbox call says).
	requester string
	s         scenario
}

// plan draws n calls from the mix with rng: sessions group up to 6 consecutive session
// calls (safe and unsafe mixed); a sandbox call goes to one of sandboxSessions session
// names as one of two requesters.
func plan(n int, rng *rand.Rand) []plannedCall {
	mix := scenarios()
	total := 0
	for _, s := range mix {
		total += s.weight
	}
	calls := make([]plannedCall, 0, n)
	session, inSession := 0, 0
	for i := range n {
		pick := rng.IntN(total)
		var s scenario
		for _, s = range mix {
			if pick < s.weight {
				break
			}
			pick -= s.weight
		}
		c := plannedCall{name: fmt.Sprintf("c%05d-%s", i, s.name), requester: tg.AdminUser, s: s}
		switch {
		case s.sandbox:
			c.session = fmt.Sprintf("sandbox-%d", 1+rng.IntN(sandboxSessions))
			if rng.IntN(2) == 1 {
				c.requester = agentUser
			}
		case s.session:
			if inSession == 0 {
				session++
				inSession = 2 + rng.IntN(5)
			}
			c.session = fmt.Sprintf("session-%d", session)
			inSession--
		}
		calls = append(calls, c)
	}
	return calls
}

func (p plannedCall) object(ns string, i int) *v1alpha1.ToolCall {
	w := tg.MakeToolCall(p.name, ns).Tool(p.s.tool).Requester(p.requester).Args(map[string]any{"n": i})
	if p.session != "" {
		w.Session(p.session)
	}
	switch {
	case p.s.sandbox:
		w.Scope(sandboxScope)
	case p.s.scope != "":
		w.Scope(p.s.scope)
	}
	return w.Obj()
}

func expectations(ns string, calls []plannedCall) map[types.NamespacedName]check.Expectation {
	out := make(map[types.NamespacedName]check.Expectation, len(calls))
	for _, c := range calls {
		e := c.s.expect
		e.Scenario = c.s.name
		out[types.NamespacedName{Namespace: ns, Name: c.name}] = e
	}
	return out
}
