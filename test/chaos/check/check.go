package check

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/toolcall"
	"github.com/toolgate/toolgate/internal/podspec"
)

// Rules, one per promise. A Violation names the rule it breaks.
const (
	// RuleLost: a call the script made is not among the calls listed at the end.
	RuleLost = "lost"
	// RuleNotTerminal: a call is not Succeeded, Failed or Denied at the end.
	RuleNotTerminal = "not-terminal"
	// RuleTerminalLate: a call was first seen terminal later than TerminalBound after the
	// last fault.
	RuleTerminalLate = "terminal-late"
	// RuleJobsPerAttempt: an attempt had more than one Job (two UIDs).
	RuleJobsPerAttempt = "jobs-per-attempt"
	// RulePodStartsPerAttempt: an attempt's body started more than once.
	RulePodStartsPerAttempt = "pod-starts-per-attempt"
	// RuleHandoversPerAttempt: a session call's attempt was handed over (and not refused)
	// more than once: its body ran twice.
	RuleHandoversPerAttempt = "handovers-per-attempt"
	// RuleSessionPodShared: one session Pod (uid) was handed calls of two sessions: two
	// namespaces, scopes, session names, requesters, tools or tool snapshots.
	RuleSessionPodShared = "session-pod-shared"
	// RuleAttempts: more attempts than the retry policy allows, fewer than the script
	// needs, or a Job or Pod for an attempt the call never recorded.
	RuleAttempts = "attempts"
	// RuleResultChanged: a result, its digest or a terminal phase changed after it was
	// first written (from the watch history and the terminal Events).
	RuleResultChanged = "result-changed"
	// RuleVerdictAfterDeny: a version after one with verdict Deny has another verdict.
	RuleVerdictAfterDeny = "verdict-after-deny"
	// RuleApprovalReused: an approval decided a call it does not name, or a call was
	// decided by an approval that is not bound to and consumed by it.
	RuleApprovalReused = "approval-reused"
	// RuleOutcome: the call ended in another phase or reason than its script says.
	RuleOutcome = "outcome"
	// RuleRanWhenDenied: a Job or Pod start exists for a call that must not run (denied).
	RuleRanWhenDenied = "ran-when-denied"
	// RuleStartedSuspended: a Pod appeared for a Job while it was suspended (waiting for
	// admission): the Job's last version before the Pod's first (by resourceVersion) says
	// spec.suspend true.
	RuleStartedSuspended = "started-while-suspended"
	// RuleNotAdmittedRan: a call that ended NotAdmitted had a Pod (start), a session
	// handover, or a Job that was never deleted.
	RuleNotAdmittedRan = "not-admitted-ran"
)

// Rules lists every rule, in report order.
func Rules() []string {
	return []string{RuleLost, RuleNotTerminal, RuleTerminalLate, RuleJobsPerAttempt, RulePodStartsPerAttempt,
		RuleHandoversPerAttempt, RuleSessionPodShared, RuleAttempts, RuleResultChanged, RuleVerdictAfterDeny, RuleApprovalReused, RuleOutcome, RuleRanWhenDenied,
		RuleStartedSuspended, RuleNotAdmittedRan}
}

// Violation is one broken promise.
type Violation struct {
	Rule string `json:"rule"`
	// Call is namespace/name of the call concerned (empty for an approval on its own).
	Call   string `json:"call,omitempty"`
	Detail string `json:"detail"`
}

// attemptKey identifies one attempt of one call: the call's uid when known, else its
// namespace/name.
type attemptKey struct {
	call    string
	attempt int
}

func callID(ns, name string, uid types.UID) string {
	if uid != "" {
		return string(uid)
	}
	return ns + "/" + name
}

// checker accumulates a Report.
type checker struct {
	h   History
	rep *Report
	// byUID maps a call uid to its namespace/name, for messages.
	names map[string]string
	// handed counts the session handovers per attempt (refused ones too).
	handed map[attemptKey]int
}

func (c *checker) fail(rule, call, format string, args ...any) {
	c.rep.Violations = append(c.rep.Violations, Violation{Rule: rule, Call: call, Detail: fmt.Sprintf(format, args...)})
}

// Check reads the history and reports every violation and the run's figures.
func Check(h History) Report {
	c := &checker{h: h, rep: &Report{Outcomes: map[string]int{}, Scenarios: map[string]int{}}, names: map[string]string{}}
	for i := range h.Calls {
		call := &h.Calls[i]
		c.names[string(call.UID)] = call.Namespace + "/" + call.Name
	}
	c.rep.Versions, c.rep.WatchGaps, c.rep.Events = len(h.Versions), h.WatchGaps, len(h.Events)
	c.terminal()
	c.timeToTerminal()
	c.perAttempt()
	c.sessions()
	c.history()
	c.terminalEvents()
	c.approvals()
	c.outcomes()
	c.admission()
	sort.SliceStable(c.rep.Violations, func(i, j int) bool {
		return slices.Index(Rules(), c.rep.Violations[i].Rule) < slices.Index(Rules(), c.rep.Violations[j].Rule)
	})
	c.rep.ViolationsByRule = map[string]int{}
	for _, v := range c.rep.Violations {
		c.rep.ViolationsByRule[v.Rule]++
	}
	return *c.rep
}

// terminal: every scripted call exists and every call is terminal.
func (c *checker) terminal() {
	listed := map[types.NamespacedName]bool{}
	for i := range c.h.Calls {
		call := &c.h.Calls[i]
		listed[types.NamespacedName{Namespace: call.Namespace, Name: call.Name}] = true
		c.rep.Calls++
		if call.Status.Phase.IsTerminal() {
			c.rep.Terminal++
		} else {
			c.fail(RuleNotTerminal, call.Namespace+"/"+call.Name, "phase %q at the end (%s)", call.Status.Phase, lastCondition(call))
		}
	}
	for _, key := range sortedKeys(c.h.Expectations) {
		if !listed[key] {
			c.rep.Calls++
			c.fail(RuleLost, key.String(), "the script made this call and it is not listed at the end")
		}
	}
}

// timeToTerminal: when each call was first seen terminal, relative to the last fault.
func (c *checker) timeToTerminal() {
	first := map[string]time.Time{}
	for _, v := range c.h.Versions {
		id := callID(v.Call.Namespace, v.Call.Name, v.Call.UID)
		if _, ok := first[id]; !ok && v.Call.Status.Phase.IsTerminal() {
			first[id] = v.Observed
		}
	}
	if c.h.LastFault.IsZero() {
		return
	}
	for i := range c.h.Calls {
		call := &c.h.Calls[i]
		at, ok := first[callID(call.Namespace, call.Name, call.UID)]
		if !ok {
			continue
		}
		d := at.Sub(c.h.LastFault)
		if d <= 0 {
			continue
		}
		c.rep.TerminalAfterLastFault++
		if d > c.rep.MaxTimeToTerminal {
			c.rep.MaxTimeToTerminal, c.rep.SlowestAfterLastFault = d, call.Namespace+"/"+call.Name
		}
		if c.h.TerminalBound > 0 && d > c.h.TerminalBound {
			c.fail(RuleTerminalLate, call.Namespace+"/"+call.Name, "first seen terminal %s after the last fault (bound %s)",
				d.Round(time.Millisecond), c.h.TerminalBound)
		}
	}
}

// perAttempt: Jobs and Pod starts per attempt, attempts per call.
func (c *checker) perAttempt() {
	jobs := map[attemptKey]map[types.UID]bool{}
	for _, j := range c.h.Jobs {
		k := attemptKey{callID(j.Namespace, j.Call, j.CallUID), j.Attempt}
		if jobs[k] == nil {
			jobs[k] = map[types.UID]bool{}
		}
		jobs[k][j.UID] = true
	}
	starts := map[attemptKey]int{}
	for _, p := range c.h.PodStarts {
		starts[attemptKey{callID(p.Namespace, p.Call, p.CallUID), p.Attempt}]++
	}
	handed := map[attemptKey]int{} // refused ones too: a call must not be handed over at all for an attempt it never recorded
	for _, h := range c.h.SessionHandovers {
		handed[attemptKey{string(h.CallUID), h.Attempt}]++
	}
	c.rep.Jobs, c.rep.PodStarts = len(c.h.Jobs), len(c.h.PodStarts)
	for _, k := range sortedAttempts(jobs) {
		n := len(jobs[k])
		c.rep.MaxJobsPerAttempt = max(c.rep.MaxJobsPerAttempt, n)
		if n > 1 {
			c.fail(RuleJobsPerAttempt, c.name(k.call), "attempt %d had %d Jobs", k.attempt, n)
		}
	}
	for _, k := range sortedAttempts(starts) {
		n := starts[k]
		c.rep.MaxPodStartsPerAttempt = max(c.rep.MaxPodStartsPerAttempt, n)
		if n > 1 {
			c.fail(RulePodStartsPerAttempt, c.name(k.call), "attempt %d's body started %d times", k.attempt, n)
		}
	}
	for i := range c.h.Calls {
		c.attempts(&c.h.Calls[i], jobs, starts, handed)
	}
}

// attempts checks one call's attempts against its retry policy and its Jobs and Pods.
func (c *checker) attempts(call *v1alpha1.ToolCall, jobs map[attemptKey]map[types.UID]bool, starts, handed map[attemptKey]int) {
	name := call.Namespace + "/" + call.Name
	exp := c.h.Expectations[types.NamespacedName{Namespace: call.Namespace, Name: call.Name}]
	limit := exp.MaxAttempts
	if limit == 0 && call.Status.Tool != nil && call.Status.Tool.Spec != nil {
		limit = int(call.Status.Tool.Spec.Retry.MaxAttempts)
	}
	if limit == 0 {
		limit = 1
	}
	n := len(call.Status.Attempts)
	c.rep.Attempts += n
	c.rep.MaxAttemptsPerCall = max(c.rep.MaxAttemptsPerCall, n)
	if n > limit {
		c.fail(RuleAttempts, name, "%d attempts, the retry policy allows %d", n, limit)
	}
	if call.Status.Phase.IsTerminal() && n < exp.MinAttempts {
		c.fail(RuleAttempts, name, "%d attempts, the script needs at least %d", n, exp.MinAttempts)
	}
	recorded := map[int]bool{}
	for _, a := range call.Status.Attempts {
		recorded[int(a.Attempt)] = true
	}
	ids := map[string]bool{callID(call.Namespace, call.Name, call.UID): true, call.Namespace + "/" + call.Name: true}
	if exp.MustNotRun || call.Status.Phase == v1alpha1.PhaseDenied {
		c.ranWhenDenied(call, ids, jobs, starts, handed)
		return
	}
	for _, k := range sortedAttempts(jobs) {
		if ids[k.call] && !recorded[k.attempt] {
			c.fail(RuleAttempts, name, "a Job of attempt %d, which the call never recorded (attempts %d)", k.attempt, n)
		}
	}
	for _, k := range sortedAttempts(starts) {
		if ids[k.call] && !recorded[k.attempt] {
			c.fail(RuleAttempts, name, "a Pod start of attempt %d, which the call never recorded (attempts %d)", k.attempt, n)
		}
	}
	for _, k := range sortedAttempts(handed) {
		if ids[k.call] && !recorded[k.attempt] {
			c.fail(RuleAttempts, name, "a session handover of attempt %d, which the call never recorded (attempts %d)", k.attempt, n)
		}
	}
}

// ranWhenDenied: a call that must not run (denied) has no Job and no Pod start.
func (c *checker) ranWhenDenied(call *v1alpha1.ToolCall, ids map[string]bool, jobs map[attemptKey]map[types.UID]bool, starts, handed map[attemptKey]int) {
	ran := 0
	for k, uids := range jobs {
		if ids[k.call] {
			ran += len(uids)
		}
	}
	for k, s := range starts {
		if ids[k.call] {
			ran += s
		}
	}
	for k, s := range handed {
		if ids[k.call] {
			ran += s
		}
	}
	if ran > 0 {
		c.fail(RuleRanWhenDenied, call.Namespace+"/"+call.Name, "phase %s (the script: it must not run) but %d Jobs, Pod starts and session handovers", call.Status.Phase, ran)
	}
}

// sessions: a session call's attempt is handed over at most once (refused handovers
// aside: the Pod's runner did not run them), and every call handed to one session Pod (by
// uid, refused ones included: the operator must not even try) belongs to one session —
// namespace, scope, session name, requester, tool and the tool's snapshot. A handover of a
// call not listed at the end cannot be placed in a session and is left out of the second
// check.
func (c *checker) sessions() {
	byUID := map[types.UID]*v1alpha1.ToolCall{}
	for i := range c.h.Calls {
		byUID[c.h.Calls[i].UID] = &c.h.Calls[i]
	}
	taken := map[attemptKey]int{}
	c.handed = map[attemptKey]int{}
	served := map[types.UID]map[string][]string{} // Pod uid → session → calls
	podName := map[types.UID]string{}
	for _, h := range c.h.SessionHandovers {
		c.rep.SessionHandovers++
		c.handed[attemptKey{string(h.CallUID), h.Attempt}]++
		if h.Refused {
			c.rep.RefusedHandovers++
		} else {
			taken[attemptKey{string(h.CallUID), h.Attempt}]++
		}
		podName[h.PodUID] = h.Namespace + "/" + h.Pod
		if served[h.PodUID] == nil {
			served[h.PodUID] = map[string][]string{}
		}
		if call := byUID[h.CallUID]; call != nil {
			key := sessionOf(call)
			served[h.PodUID][key] = append(served[h.PodUID][key], call.Name)
		}
	}
	c.rep.SessionPods = len(served)
	for _, k := range sortedAttempts(taken) {
		n := taken[k]
		c.rep.MaxHandoversPerAttempt = max(c.rep.MaxHandoversPerAttempt, n)
		if n > 1 {
			c.fail(RuleHandoversPerAttempt, c.name(k.call), "attempt %d was handed over %d times (not refused): its body ran %d times", k.attempt, n, n)
		}
	}
	for _, uid := range slices.Sorted(maps.Keys(served)) {
		if sessions := served[uid]; len(sessions) > 1 {
			var parts []string
			for _, key := range slices.Sorted(maps.Keys(sessions)) {
				parts = append(parts, fmt.Sprintf("%s (%s)", key, strings.Join(sessions[key], ", ")))
			}
			c.fail(RuleSessionPodShared, podName[uid], "session Pod uid %s served calls of %d sessions: %s", uid, len(sessions), strings.Join(parts, "; "))
		}
	}
}

// sessionOf names the session a call's session Pod is for: namespace, scope, session,
// requester, tool and the digest of its tool snapshot (as the operator keys its Pods).
func sessionOf(call *v1alpha1.ToolCall) string {
	snapshot := ""
	if call.Status.Tool != nil && call.Status.Tool.Spec != nil {
		snapshot = podspec.SessionToolDigest(call.Status.Tool.Spec)
		snapshot = snapshot[:min(len(snapshot), 12)]
	}
	return fmt.Sprintf("namespace %s scope %q session %q requester %q tool %q@%s", call.Namespace, call.Spec.Scope, call.Spec.Session,
		call.Spec.Requester, call.Spec.Tool, snapshot)
}

// history walks the watch history of each call: a written result, digest or terminal phase
// never changes, and a Deny verdict stays Deny.
func (c *checker) history() {
	type seen struct {
		result   *v1alpha1.ToolResult
		digest   string
		terminal v1alpha1.ToolCallPhase
		denied   bool
		reported map[string]bool
	}
	state := map[string]*seen{}
	versions := append([]CallVersion(nil), c.h.Versions...)
	newest := map[string]uint64{}
	for _, v := range versions {
		id := callID(v.Call.Namespace, v.Call.Name, v.Call.UID)
		newest[id] = max(newest[id], resourceVersion(v.Call.ResourceVersion))
	}
	for i := range c.h.Calls {
		// The final listing is one more version of every call, unless the watch already
		// delivered a newer one (a list served from a cache a little behind the watch).
		call := c.h.Calls[i]
		if rv := resourceVersion(call.ResourceVersion); rv == 0 || rv >= newest[callID(call.Namespace, call.Name, call.UID)] {
			versions = append(versions, CallVersion{Type: "LISTED", Call: call})
		}
	}
	for _, v := range versions {
		call := &v.Call
		id := callID(call.Namespace, call.Name, call.UID)
		name := call.Namespace + "/" + call.Name
		s := state[id]
		if s == nil {
			s = &seen{reported: map[string]bool{}}
			state[id] = s
		}
		fail := func(rule, format string, args ...any) {
			if key := rule + format; !s.reported[key] {
				s.reported[key] = true
				c.fail(rule, name, format+" (resourceVersion %s)", append(args, call.ResourceVersion)...)
			}
		}
		st := &call.Status
		if v.Type == "DELETED" {
			continue
		}
		if s.result != nil && (st.Result == nil || !equality.Semantic.DeepEqual(*s.result, *st.Result)) {
			fail(RuleResultChanged, "the result changed after it was written: %s → %s", describe(s.result), describe(st.Result))
		}
		if s.digest != "" && st.ResultDigest != s.digest {
			fail(RuleResultChanged, "resultDigest changed from %s to %q", s.digest, st.ResultDigest)
		}
		if s.terminal != "" && st.Phase != s.terminal {
			fail(RuleResultChanged, "phase changed from terminal %s to %q", s.terminal, st.Phase)
		}
		if s.denied && st.Verdict != v1alpha1.VerdictDeny {
			fail(RuleVerdictAfterDeny, "verdict %q after Deny", st.Verdict)
		}
		if s.result == nil && st.Result != nil {
			s.result = st.Result.DeepCopy()
		}
		if s.digest == "" {
			s.digest = st.ResultDigest
		}
		if s.terminal == "" && st.Phase.IsTerminal() {
			s.terminal = st.Phase
		}
		s.denied = s.denied || st.Verdict == v1alpha1.VerdictDeny
	}
}

// terminalEvents: the operator emits one terminal event (ResultFrozen or Denied) per
// result it freezes; two that differ mean two results were frozen for one call.
func (c *checker) terminalEvents() {
	notes := map[types.UID]map[string]bool{}
	for i := range c.h.Events {
		e := &c.h.Events[i]
		if e.Reason != toolcall.EventResultFrozen && e.Reason != toolcall.EventDenied {
			continue
		}
		uid := e.Regarding.UID
		if notes[uid] == nil {
			notes[uid] = map[string]bool{}
		}
		notes[uid][e.Note] = true
	}
	for uid, set := range notes {
		if len(set) > 1 {
			c.fail(RuleResultChanged, c.name(string(uid)), "%d different terminal events: %s", len(set), strings.Join(sortedSet(set), " | "))
		}
	}
}

// approvals: an approval decides only the call it names; a call decided by an approval
// has one bound to it and consumed by it.
func (c *checker) approvals() {
	byName := map[types.NamespacedName][]*v1alpha1.ToolCallApproval{}
	for i := range c.h.Approvals {
		a := &c.h.Approvals[i]
		key := types.NamespacedName{Namespace: a.Namespace, Name: a.Name}
		byName[key] = append(byName[key], a)
		if a.Status.ConsumedBy != "" && a.Status.ConsumedBy != a.Spec.CallUID {
			c.fail(RuleApprovalReused, c.name(a.Status.ConsumedBy), "approval %s/%s (for call uid %s) decided call uid %s",
				a.Namespace, a.Name, a.Spec.CallUID, a.Status.ConsumedBy)
		}
	}
	for i := range c.h.Calls {
		call := &c.h.Calls[i]
		adm := meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionAdmitted)
		if adm == nil || !decidedByApproval(adm.Reason) {
			continue
		}
		c.rep.ApprovalDecisions++
		bound := false
		for _, a := range byName[types.NamespacedName{Namespace: call.Namespace, Name: call.Name}] {
			bound = bound || (a.Spec.CallUID == string(call.UID) && a.Status.ConsumedBy == string(call.UID))
		}
		if !bound {
			c.fail(RuleApprovalReused, call.Namespace+"/"+call.Name, "decided by an approval (Admitted %s) but no approval names uid %s and is consumed by it",
				adm.Reason, call.UID)
		}
	}
}

// killedWhileRunning says whether an operator kill fell while the call's last attempt
// ran: at or after its startTime less a second (written to the second; the call's
// creation when absent) and at or before end, when the call was first seen terminal (zero:
// never seen, no bound). The string describes the window for a report.
func (c *checker) killedWhileRunning(call *v1alpha1.ToolCall, end time.Time) (string, bool) {
	from := call.CreationTimestamp.Time
	if n := len(call.Status.Attempts); n > 0 && call.Status.Attempts[n-1].StartTime != nil {
		from = call.Status.Attempts[n-1].StartTime.Time
	}
	from = from.Add(-time.Second)
	for _, k := range c.h.Kills {
		if !k.Before(from) && (end.IsZero() || !k.After(end)) {
			return "", true
		}
	}
	to := "never seen terminal"
	if !end.IsZero() {
		to = end.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("ran from %s to %s; %d kills", from.Format(time.RFC3339Nano), to, len(c.h.Kills)), false
}

func executedMessage(call *v1alpha1.ToolCall) string {
	if c := meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionExecuted); c != nil {
		return c.Message
	}
	return ""
}

func decidedByApproval(reason string) bool {
	return reason == v1alpha1.ReasonApproved || reason == v1alpha1.ReasonApprovalDenied || reason == v1alpha1.ReasonApprovalDigestMismatch
}

// outcomes: each scripted call ended as its script says.
func (c *checker) outcomes() {
	firstTerminal := map[string]time.Time{}
	for _, v := range c.h.Versions {
		id := callID(v.Call.Namespace, v.Call.Name, v.Call.UID)
		if _, ok := firstTerminal[id]; !ok && v.Call.Status.Phase.IsTerminal() {
			firstTerminal[id] = v.Observed
		}
	}
	for i := range c.h.Calls {
		call := &c.h.Calls[i]
		reason := ""
		if call.Status.Result != nil {
			reason = call.Status.Result.Reason
		}
		c.rep.Outcomes[outcomeKey(call.Status.Phase, reason)]++
		exp, ok := c.h.Expectations[types.NamespacedName{Namespace: call.Namespace, Name: call.Name}]
		if !ok {
			continue
		}
		c.rep.Scenarios[exp.Scenario]++
		if c.rep.ScenarioOutcomes == nil {
			c.rep.ScenarioOutcomes = map[string]map[string]int{}
		}
		if c.rep.ScenarioOutcomes[exp.Scenario] == nil {
			c.rep.ScenarioOutcomes[exp.Scenario] = map[string]int{}
		}
		c.rep.ScenarioOutcomes[exp.Scenario][outcomeKey(call.Status.Phase, reason)]++
		if !call.Status.Phase.IsTerminal() {
			continue // reported as not terminal
		}
		switch {
		case Ending{Phase: exp.Phase, Reasons: exp.Reasons}.allows(call.Status.Phase, reason):
		case exp.IfKilled != nil && exp.IfKilled.allows(call.Status.Phase, reason) && !strings.Contains(executedMessage(call), exp.IfKilled.Executed):
			c.fail(RuleOutcome, call.Namespace+"/"+call.Name, "scenario %s ended %s, allowed after a kill only when the Executed condition says %q; it says %q",
				exp.Scenario, outcomeKey(call.Status.Phase, reason), exp.IfKilled.Executed, executedMessage(call))
		case exp.IfKilled != nil && exp.IfKilled.allows(call.Status.Phase, reason):
			if at, ok := c.killedWhileRunning(call, firstTerminal[callID(call.Namespace, call.Name, call.UID)]); ok {
				c.rep.EndedByKill++
				if n := len(call.Status.Attempts); n > 0 && c.handed[attemptKey{string(call.UID), int(call.Status.Attempts[n-1].Attempt)}] == 0 {
					c.rep.EndedByKillNotHandedOver++
				}
			} else {
				c.fail(RuleOutcome, call.Namespace+"/"+call.Name, "scenario %s ended %s, allowed only when an operator kill fell while it ran; none did (%s)",
					exp.Scenario, outcomeKey(call.Status.Phase, reason), at)
			}
		default:
			c.fail(RuleOutcome, call.Namespace+"/"+call.Name, "scenario %s ended %s, the script says %s",
				exp.Scenario, outcomeKey(call.Status.Phase, reason), expected(exp))
		}
		if exp.Approval == Approve && call.Status.Phase != v1alpha1.PhaseDenied {
			if adm := meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionAdmitted); adm == nil || adm.Reason != v1alpha1.ReasonApproved {
				c.fail(RuleOutcome, call.Namespace+"/"+call.Name, "scenario %s ran without being Approved (Admitted %s)", exp.Scenario, conditionReason(adm))
			}
		}
	}
}

// admission: no Pod appears for a Job while it is suspended, and a call refused NotAdmitted
// never ran and its Job was deleted. Whether a Pod came while its Job was suspended is read
// from resourceVersions (one etcd orders them all), not from clocks: the Job version with
// the highest resourceVersion below the Pod's first must not be suspended. A Job whose watch
// re-listed (JobRecord.Relisted) or a version that is not a number is not judged.
func (c *checker) admission() {
	jobs := map[types.UID]*JobRecord{}
	for i := range c.h.Jobs {
		j := &c.h.Jobs[i]
		jobs[j.UID] = j
		if len(j.Versions) == 0 || !j.Versions[0].Suspended {
			continue
		}
		c.rep.SuspendedJobs++
		for _, v := range j.Versions[1:] {
			if !v.Suspended {
				c.rep.ResumedJobs++
				if !j.Created.IsZero() {
					c.rep.MaxAdmissionWait = max(c.rep.MaxAdmissionWait, v.Observed.Sub(j.Created))
				}
				break
			}
		}
	}
	for _, p := range c.h.Pods {
		j := jobs[p.JobUID]
		podRV := resourceVersion(p.ResourceVersion)
		if j == nil || j.Relisted || podRV == 0 {
			continue
		}
		var before *JobVersion
		for k := range j.Versions {
			v := &j.Versions[k]
			if rv := resourceVersion(v.ResourceVersion); rv != 0 && rv < podRV && (before == nil || rv > resourceVersion(before.ResourceVersion)) {
				before = v
			}
		}
		if before != nil && before.Suspended {
			c.fail(RuleStartedSuspended, c.name(callID(p.Namespace, p.Call, p.CallUID)),
				"Pod %s (resourceVersion %s) appeared while its Job %s was suspended (its version %s)", p.Pod, p.ResourceVersion, j.Name, before.ResourceVersion)
		}
	}
	for i := range c.h.Calls {
		call := &c.h.Calls[i]
		if call.Status.Result == nil || call.Status.Result.Reason != v1alpha1.ReasonNotAdmitted {
			continue
		}
		c.rep.NotAdmitted++
		name := call.Namespace + "/" + call.Name
		mine := func(ns, callName string, uid types.UID) bool {
			return uid == call.UID || (uid == "" && ns == call.Namespace && callName == call.Name)
		}
		pods := map[string]bool{}
		for _, p := range append(append([]PodStart(nil), c.h.PodStarts...), c.h.Pods...) {
			if mine(p.Namespace, p.Call, p.CallUID) {
				pods[p.Namespace+"/"+p.Pod+"/"+p.Job] = true
			}
		}
		for _, h := range c.h.SessionHandovers {
			if h.CallUID == call.UID {
				pods[h.Namespace+"/"+h.Pod+" (handover)"] = true
			}
		}
		if len(pods) > 0 {
			c.fail(RuleNotAdmittedRan, name, "ended NotAdmitted but its body had %d Pods or handovers: %s", len(pods), strings.Join(sortedSet(pods), ", "))
		}
		for _, j := range c.h.Jobs {
			if mine(j.Namespace, j.Call, j.CallUID) && !j.Deleted {
				c.fail(RuleNotAdmittedRan, name, "ended NotAdmitted but its Job %s was never seen deleted", j.Name)
			}
		}
	}
}
