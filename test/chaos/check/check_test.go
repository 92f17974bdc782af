package check

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/toolcall"
	"github.com/toolgate/toolgate/internal/podspec"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

const ns = "chaos"

var succeeded = []string{v1alpha1.ReasonSucceeded}

func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

// call builds a ToolCall at a phase with a verdict, attempts and (terminal) result.
func call(name string, phase v1alpha1.ToolCallPhase, verdict v1alpha1.Verdict, attempts int, res *v1alpha1.ToolResult) v1alpha1.ToolCall {
	c := v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
	c.Status.Phase, c.Status.Verdict = phase, verdict
	c.Status.Tool = &v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "t", Spec: &v1alpha1.ToolSpec{Retry: v1alpha1.RetryPolicy{MaxAttempts: 2}}}
	for i := 1; i <= attempts; i++ {
		c.Status.Attempts = append(c.Status.Attempts, v1alpha1.Attempt{Attempt: int32(i), JobName: podspec.JobName(name, int32(i))})
	}
	if res != nil {
		c.Status.Result, c.Status.ResultDigest = res, digest('a')
	}
	return c
}

func ok(content string) *v1alpha1.ToolResult {
	return &v1alpha1.ToolResult{OK: true, Reason: v1alpha1.ReasonSucceeded, Content: &apiextensionsv1.JSON{Raw: []byte(content)}}
}

func failed(reason string) *v1alpha1.ToolResult {
	return &v1alpha1.ToolResult{IsError: true, Reason: reason, Error: reason}
}

func admitted(c *v1alpha1.ToolCall, reason string) {
	c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionAdmitted, Status: metav1.ConditionTrue, Reason: reason})
}

func version(c v1alpha1.ToolCall, rv string, at time.Duration) CallVersion {
	c.ResourceVersion = rv
	return CallVersion{Type: "MODIFIED", Observed: t0.Add(at), Call: c}
}

func job(c v1alpha1.ToolCall, attempt int, uid string) JobRecord {
	return JobRecord{Namespace: ns, Name: podspec.JobName(c.Name, int32(attempt)), UID: types.UID(uid), Call: c.Name, CallUID: c.UID, Attempt: attempt}
}

func start(c v1alpha1.ToolCall, attempt int) PodStart {
	return PodStart{Namespace: ns, Call: c.Name, CallUID: c.UID, Attempt: attempt, Job: podspec.JobName(c.Name, int32(attempt))}
}

// good is a history that keeps every promise: a call that succeeds on its second attempt,
// an approved one, one denied by its approver, one denied by policy.
func good() History {
	retried := call("retried", v1alpha1.PhaseSucceeded, v1alpha1.VerdictAllow, 2, ok(`{"n":1}`))
	approved := call("approved", v1alpha1.PhaseSucceeded, v1alpha1.VerdictAllow, 1, ok(`{}`))
	admitted(&approved, v1alpha1.ReasonApproved)
	refused := call("refused", v1alpha1.PhaseDenied, v1alpha1.VerdictDeny, 0, failed(v1alpha1.ReasonApprovalDenied))
	admitted(&refused, v1alpha1.ReasonApprovalDenied)
	denied := call("denied", v1alpha1.PhaseDenied, v1alpha1.VerdictDeny, 0, failed(v1alpha1.ReasonPolicyDenied))

	running := retried
	running.Status.Phase, running.Status.Result, running.Status.ResultDigest = v1alpha1.PhaseRunning, nil, ""
	askRefused := refused
	askRefused.Status.Phase, askRefused.Status.Verdict, askRefused.Status.Result, askRefused.Status.ResultDigest =
		v1alpha1.PhaseAwaitingApproval, v1alpha1.VerdictAsk, nil, ""
	approval := func(c v1alpha1.ToolCall, d v1alpha1.ApprovalDecision) v1alpha1.ToolCallApproval {
		a := v1alpha1.ToolCallApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.Name, UID: types.UID("approval-" + c.Name)}}
		a.Spec.CallUID, a.Spec.Decision, a.Status.ConsumedBy = string(c.UID), d, string(c.UID)
		return a
	}
	return History{
		Calls: []v1alpha1.ToolCall{retried, approved, refused, denied},
		Versions: []CallVersion{
			version(running, "10", time.Second), version(askRefused, "11", time.Second),
			version(retried, "12", 3*time.Second), version(approved, "13", 4*time.Second),
			version(refused, "14", 5*time.Second), version(denied, "15", 6*time.Second),
			version(retried, "16", 7*time.Second), // a later write that changes nothing of the result
		},
		Jobs:      []JobRecord{job(retried, 1, "j1"), job(retried, 2, "j2"), job(approved, 1, "j3")},
		PodStarts: []PodStart{start(retried, 1), start(retried, 2), start(approved, 1)},
		Approvals: []v1alpha1.ToolCallApproval{approval(approved, v1alpha1.DecisionApprove), approval(refused, v1alpha1.DecisionDeny)},
		Events: []eventsv1.Event{
			{Reason: toolcall.EventResultFrozen, Note: "ended Succeeded", Regarding: corev1Ref(retried)},
			{Reason: toolcall.EventResultFrozen, Note: "ended Succeeded", Regarding: corev1Ref(retried)}, // a repeat, same note
		},
		Expectations: map[types.NamespacedName]Expectation{
			{Namespace: ns, Name: "retried"}:  {Scenario: "retry", Phase: v1alpha1.PhaseSucceeded, Reasons: succeeded, MinAttempts: 2},
			{Namespace: ns, Name: "approved"}: {Scenario: "approve", Phase: v1alpha1.PhaseSucceeded, Reasons: succeeded, Approval: Approve},
			{Namespace: ns, Name: "refused"}: {Scenario: "deny", Phase: v1alpha1.PhaseDenied, Reasons: []string{v1alpha1.ReasonApprovalDenied},
				Approval: Deny, MustNotRun: true},
			{Namespace: ns, Name: "denied"}: {Scenario: "policy-deny", Phase: v1alpha1.PhaseDenied, Reasons: []string{v1alpha1.ReasonPolicyDenied}, MustNotRun: true},
		},
		LastFault:     t0.Add(2 * time.Second),
		TerminalBound: 30 * time.Second,
	}
}

func TestGoodHistoryHasNoViolations(t *testing.T) {
	rep := Check(good())
	if !rep.OK() {
		t.Fatalf("violations in a good history: %+v", rep.Violations)
	}
	if rep.Calls != 4 || rep.Terminal != 4 || rep.Jobs != 3 || rep.PodStarts != 3 || rep.Attempts != 3 ||
		rep.MaxJobsPerAttempt != 1 || rep.MaxPodStartsPerAttempt != 1 || rep.MaxAttemptsPerCall != 2 || rep.ApprovalDecisions != 2 {
		t.Errorf("figures: %+v", rep)
	}
	// retried was first seen terminal at +3s, the last fault at +2s; denied at +6s.
	if rep.MaxTimeToTerminal != 4*time.Second || rep.SlowestAfterLastFault != ns+"/denied" || rep.TerminalAfterLastFault != 4 {
		t.Errorf("time to terminal: %s (%s, %d calls)", rep.MaxTimeToTerminal, rep.SlowestAfterLastFault, rep.TerminalAfterLastFault)
	}
}

// Each case breaks one promise in an otherwise good history; the report must name exactly
// that rule (and nothing else).
func TestEachRuleCanFail(t *testing.T) {
	cases := []struct {
		name   string
		rule   string
		break_ func(h *History)
	}{
		{"a scripted call is missing", RuleLost, func(h *History) { h.Calls = h.Calls[1:]; dropVersions(h, "retried"); dropRecords(h, "retried") }},
		{"a call never ends", RuleNotTerminal, func(h *History) {
			h.Calls[1].Status.Phase, h.Calls[1].Status.Result, h.Calls[1].Status.ResultDigest = v1alpha1.PhaseRunning, nil, ""
			dropVersions(h, "approved")
		}},
		{"a call ends too late after the last fault", RuleTerminalLate, func(h *History) { h.TerminalBound = 3 * time.Second }},
		{"two Jobs for one attempt", RuleJobsPerAttempt, func(h *History) { h.Jobs = append(h.Jobs, job(h.Calls[1], 1, "j3-again")) }},
		{"a body started twice", RulePodStartsPerAttempt, func(h *History) { h.PodStarts = append(h.PodStarts, start(h.Calls[1], 1)) }},
		{"more attempts than the retry policy", RuleAttempts, func(h *History) { h.Calls[0].Status.Tool.Spec.Retry.MaxAttempts = 1 }},
		{"fewer attempts than the script needs", RuleAttempts, func(h *History) {
			h.Expectations[types.NamespacedName{Namespace: ns, Name: "approved"}] = Expectation{Scenario: "approve", Phase: v1alpha1.PhaseSucceeded, Reasons: succeeded, Approval: Approve, MinAttempts: 2}
		}},
		{"a Job for an attempt the call never recorded", RuleAttempts, func(h *History) {
			h.Jobs = append(h.Jobs, job(h.Calls[1], 2, "j4"))
			h.Calls[1].Status.Tool.Spec.Retry.MaxAttempts = 3
		}},
		{"a result rewritten", RuleResultChanged, func(h *History) { h.Calls[0].Status.Result = ok(`{"n":2}`) }},
		{"a result removed", RuleResultChanged, func(h *History) { h.Versions[6].Call.Status.Result = nil }},
		{"a result digest rewritten", RuleResultChanged, func(h *History) { h.Calls[0].Status.ResultDigest = digest('b') }},
		{"a terminal phase changed", RuleResultChanged, func(h *History) { h.Versions[6].Call.Status.Phase = v1alpha1.PhaseRunning }},
		{"two different terminal events", RuleResultChanged, func(h *History) { h.Events[1].Note = "ended Failed" }},
		{"a verdict raised after Deny", RuleVerdictAfterDeny, func(h *History) {
			v := version(h.Calls[3], "17", 8*time.Second)
			v.Call.Status.Verdict = v1alpha1.VerdictAllow
			h.Versions = append(h.Versions, v)
		}},
		{"an approval consumed by another call", RuleApprovalReused, func(h *History) { h.Approvals[0].Status.ConsumedBy = "uid-other" }},
		{"a call approved by another call's approval", RuleApprovalReused, func(h *History) { h.Approvals[0].Spec.CallUID = "uid-earlier" }},
		{"a scripted success that failed", RuleOutcome, func(h *History) {
			h.Calls[0].Status.Phase, h.Calls[0].Status.Result = v1alpha1.PhaseFailed, failed(v1alpha1.ReasonNonZeroExit)
			dropVersions(h, "retried")
		}},
		{"a scripted success without its reason", RuleOutcome, func(h *History) {
			h.Calls[0].Status.Result = ok(`{"n":1}`)
			h.Calls[0].Status.Result.Reason = ""
			dropVersions(h, "retried")
		}},
		{"a scripted denial with another reason", RuleOutcome, func(h *History) {
			h.Calls[3].Status.Result = failed(v1alpha1.ReasonGuardDenied)
			dropVersions(h, "denied")
		}},
		{"an approval call that ran without being approved", RuleOutcome, func(h *History) {
			h.Calls[1].Status.Conditions[0].Reason = v1alpha1.ReasonPolicyAllowed
		}},
		{"a denied call ran", RuleRanWhenDenied, func(h *History) { h.PodStarts = append(h.PodStarts, start(h.Calls[3], 1)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := good()
			for i := range h.Calls {
				h.Calls[i].ResourceVersion = "100" // the final listing is the newest version
			}
			tc.break_(&h)
			rep := Check(h)
			if rep.ViolationsByRule[tc.rule] == 0 {
				t.Fatalf("rule %s did not fire; violations %+v", tc.rule, rep.Violations)
			}
			for _, v := range rep.Violations {
				if v.Rule != tc.rule {
					t.Errorf("another rule fired too: %+v", v)
				}
			}
			var out bytes.Buffer
			rep.Print(&out)
			if !strings.Contains(out.String(), "["+tc.rule+"]") {
				t.Errorf("the printed report does not list the violation:\n%s", out.String())
			}
		})
	}
}

// A final listing older than a version the watch delivered is not a change back.
func TestAStaleFinalListingIsNotAChange(t *testing.T) {
	h := good()
	stale := h.Versions[0].Call // retried, Running, resourceVersion 10
	h.Calls[0] = stale
	h.Calls[0].Status = h.Versions[6].Call.Status
	h.Calls[0].Status.Phase, h.Calls[0].Status.Result, h.Calls[0].Status.ResultDigest = v1alpha1.PhaseRunning, nil, ""
	rep := Check(h)
	if rep.ViolationsByRule[RuleResultChanged] != 0 {
		t.Errorf("a stale listing counted as a change: %+v", rep.Violations)
	}
}

func TestReportPrintsAndMarshals(t *testing.T) {
	rep := Check(good())
	var out bytes.Buffer
	rep.Print(&out)
	for _, want := range []string{"calls terminal / total", "4 / 4", "Jobs per attempt", "max 1 (3 / 3 attempts = 1.000)", "no violations"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil || back.Calls != 4 || back.MaxTimeToTerminal != rep.MaxTimeToTerminal {
		t.Errorf("JSON round trip: %v %+v", err, back)
	}
}

func dropVersions(h *History, name string) {
	kept := h.Versions[:0]
	for _, v := range h.Versions {
		if v.Call.Name != name {
			kept = append(kept, v)
		}
	}
	h.Versions = kept
}

func dropRecords(h *History, name string) {
	var jobs []JobRecord
	for _, j := range h.Jobs {
		if j.Call != name {
			jobs = append(jobs, j)
		}
	}
	var starts []PodStart
	for _, p := range h.PodStarts {
		if p.Call != name {
			starts = append(starts, p)
		}
	}
	h.Jobs, h.PodStarts, h.Events = jobs, starts, nil
}

func corev1Ref(c v1alpha1.ToolCall) corev1.ObjectReference {
	return corev1.ObjectReference{Namespace: c.Namespace, Name: c.Name, UID: c.UID}
}

// sessionCall is a call of session "one" by requester in scope "sandbox", its one attempt
// run in a session Pod from start.
func sessionCall(name, requester string, phase v1alpha1.ToolCallPhase, res *v1alpha1.ToolResult, start time.Time) v1alpha1.ToolCall {
	c := call(name, phase, v1alpha1.VerdictAllow, 1, res)
	c.Spec.Tool, c.Spec.Scope, c.Spec.Session, c.Spec.Requester = "t", "sandbox", "one", requester
	c.Status.Tool.Spec.Retry.MaxAttempts = 1
	c.Status.Attempts[0].JobName, c.Status.Attempts[0].Path, c.Status.Attempts[0].PodName = "", v1alpha1.PathSession, "toolgate-session-x"
	c.Status.Attempts[0].StartTime = &metav1.Time{Time: start}
	return c
}

func handover(c v1alpha1.ToolCall, pod string, attempt int, refused bool) SessionHandover {
	return SessionHandover{Namespace: ns, Pod: "toolgate-session-" + pod, PodUID: types.UID(pod), CallUID: c.UID, Attempt: attempt, Refused: refused}
}

// goodSessions is good() plus session calls that keep every promise: s1 and s2 of one
// session in Pod "pod-a" (s2 refused once by a Pod another process started, then handed
// to pod-a), the same session name of another requester in its own Pod "pod-b", and s3,
// whose operator was killed while it ran: Failed JobDeleted, allowed by its IfKilled.
func goodSessions() History {
	h := good()
	killed := &Ending{Phase: v1alpha1.PhaseFailed, Reasons: []string{v1alpha1.ReasonJobDeleted}, Executed: "operator: restarted"}
	s1 := sessionCall("s1", "alice", v1alpha1.PhaseSucceeded, ok(`{}`), t0.Add(time.Second))
	s2 := sessionCall("s2", "alice", v1alpha1.PhaseSucceeded, ok(`{}`), t0.Add(2*time.Second))
	b1 := sessionCall("b1", "bob", v1alpha1.PhaseSucceeded, ok(`{}`), t0.Add(2*time.Second))
	s3 := sessionCall("s3", "alice", v1alpha1.PhaseFailed, failed(v1alpha1.ReasonJobDeleted), t0.Add(4*time.Second))
	s3.Status.Conditions = append(s3.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionExecuted, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonJobDeleted, Message: "deleted (operator: restarted while the call ran in session Pod x)"})
	h.Calls = append(h.Calls, s1, s2, b1, s3)
	h.Versions = append(h.Versions, version(s1, "20", 2*time.Second), version(s2, "21", 3*time.Second),
		version(b1, "22", 3*time.Second), version(s3, "23", 6*time.Second))
	h.SessionHandovers = []SessionHandover{handover(s1, "pod-a", 1, false), handover(s2, "pod-old", 1, true),
		handover(s2, "pod-a", 1, false), handover(b1, "pod-b", 1, false), handover(s3, "pod-a", 1, false)}
	h.Kills = []time.Time{t0.Add(2 * time.Second), t0.Add(5 * time.Second)}
	for _, c := range []v1alpha1.ToolCall{s1, s2, b1, s3} {
		e := Expectation{Scenario: "sandbox", Phase: v1alpha1.PhaseSucceeded, Reasons: succeeded, IfKilled: killed}
		h.Expectations[types.NamespacedName{Namespace: ns, Name: c.Name}] = e
	}
	return h
}

func TestGoodSessionHistoryHasNoViolations(t *testing.T) {
	rep := Check(goodSessions())
	if !rep.OK() {
		t.Fatalf("violations in a good history: %+v", rep.Violations)
	}
	if rep.SessionHandovers != 5 || rep.RefusedHandovers != 1 || rep.SessionPods != 3 || rep.MaxHandoversPerAttempt != 1 || rep.EndedByKill != 1 {
		t.Errorf("figures: %+v", rep)
	}
	var out bytes.Buffer
	rep.Print(&out)
	for _, want := range []string{"max 1 (5 handovers, 1 refused)", "3 session Pods", "1 ended as allowed only after a kill while they ran (0 never handed over)",
		"sandbox ended: Failed/JobDeleted 1, Succeeded/Succeeded 3"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// Each case breaks one session promise in goodSessions; exactly that rule must fire.
func TestEachSessionRuleCanFail(t *testing.T) {
	at := func(h *History, name string) *v1alpha1.ToolCall {
		for i := range h.Calls {
			if h.Calls[i].Name == name {
				return &h.Calls[i]
			}
		}
		t.Fatalf("no call %s", name)
		return nil
	}
	cases := []struct {
		name   string
		rule   string
		break_ func(h *History)
	}{
		{"an attempt handed over twice to one Pod", RuleHandoversPerAttempt, func(h *History) {
			h.SessionHandovers = append(h.SessionHandovers, handover(*at(h, "s1"), "pod-a", 1, false))
		}},
		{"an attempt handed over to two Pods", RuleHandoversPerAttempt, func(h *History) {
			h.SessionHandovers = append(h.SessionHandovers, handover(*at(h, "s3"), "pod-c", 1, false))
		}},
		{"a Pod served two requesters", RuleSessionPodShared, func(h *History) { h.SessionHandovers[3].PodUID = "pod-a" }},
		{"a Pod served two session names", RuleSessionPodShared, func(h *History) { at(h, "s2").Spec.Session = "two" }},
		{"a Pod served two scopes", RuleSessionPodShared, func(h *History) { at(h, "s1").Spec.Scope = "other" }},
		{"a Pod served two tool snapshots", RuleSessionPodShared, func(h *History) { at(h, "s1").Status.Tool.Spec.Timeout = &metav1.Duration{Duration: time.Minute} }},
		{"a Pod was even offered another session's call", RuleSessionPodShared, func(h *History) {
			h.SessionHandovers = append(h.SessionHandovers, handover(*at(h, "b1"), "pod-a", 1, true))
		}},
		{"a killed ending with no kill while it ran", RuleOutcome, func(h *History) { h.Kills = h.Kills[:1] }},
		{"a killed ending when the kill came after it ended", RuleOutcome, func(h *History) { h.Kills = []time.Time{t0.Add(7 * time.Second)} }},
		{"a killed ending another path of the operator came to", RuleOutcome, func(h *History) {
			at(h, "s3").Status.Conditions[0].Message = "deleted (operator: the session Pod's connection failed during the call)"
		}},
		{"another failure reason after a kill", RuleOutcome, func(h *History) {
			at(h, "s3").Status.Result = failed(v1alpha1.ReasonNonZeroExit)
			dropVersions(h, "s3")
		}},
		{"a handover of an attempt the call never recorded", RuleAttempts, func(h *History) {
			h.SessionHandovers = append(h.SessionHandovers, handover(*at(h, "s1"), "pod-a", 2, true))
		}},
		{"a denied call handed over", RuleRanWhenDenied, func(h *History) {
			h.SessionHandovers = append(h.SessionHandovers, SessionHandover{Namespace: ns, Pod: "p", PodUID: "pod-d", CallUID: at(h, "denied").UID, Attempt: 1, Refused: true})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := goodSessions()
			for i := range h.Calls {
				h.Calls[i].ResourceVersion = "100"
			}
			tc.break_(&h)
			rep := Check(h)
			if rep.ViolationsByRule[tc.rule] == 0 {
				t.Fatalf("rule %s did not fire; violations %+v", tc.rule, rep.Violations)
			}
			for _, v := range rep.Violations {
				if v.Rule != tc.rule {
					t.Errorf("another rule fired too: %+v", v)
				}
			}
		})
	}
}

// A call that ended by a kill without ever being handed over is allowed, and counted.
func TestKilledBeforeHandoverIsCounted(t *testing.T) {
	h := goodSessions()
	h.SessionHandovers = h.SessionHandovers[:4] // s3's handover never happened
	rep := Check(h)
	if !rep.OK() || rep.EndedByKill != 1 || rep.EndedByKillNotHandedOver != 1 {
		t.Errorf("violations %+v, ended by kill %d, of them never handed over %d; want none, 1, 1", rep.Violations, rep.EndedByKill, rep.EndedByKillNotHandedOver)
	}
}
