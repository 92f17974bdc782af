package check

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what Check found: the run's figures and every violation. It marshals to JSON.
type Report struct {
	// Calls is the number of calls listed at the end plus those the script made that are
	// missing; Terminal those in a terminal phase.
	Calls    int `json:"calls"`
	Terminal int `json:"terminal"`
	// TerminalAfterLastFault counts the calls first seen terminal after the last fault;
	// MaxTimeToTerminal is the longest of those waits (SlowestAfterLastFault the call).
	TerminalAfterLastFault int           `json:"terminalAfterLastFault"`
	MaxTimeToTerminal      time.Duration `json:"maxTimeToTerminalNanos"`
	SlowestAfterLastFault  string        `json:"slowestAfterLastFault,omitempty"`
	// Attempts is the sum of the calls' recorded attempts; Jobs and PodStarts the Jobs
	// and Pod starts seen.
	Attempts  int `json:"attempts"`
	Jobs      int `json:"jobs"`
	PodStarts int `json:"podStarts"`
	// The per-attempt and per-call maxima (goal: 1, 1, the retry policy).
	MaxJobsPerAttempt      int `json:"maxJobsPerAttempt"`
	MaxPodStartsPerAttempt int `json:"maxPodStartsPerAttempt"`
	MaxAttemptsPerCall     int `json:"maxAttemptsPerCall"`
	// ApprovalDecisions counts calls decided by an approval (approved or denied).
	ApprovalDecisions int `json:"approvalDecisions"`
	// SessionHandovers counts the Handovers session Pods received (RefusedHandovers of them
	// refused), SessionPods the Pods (uids) they went to, MaxHandoversPerAttempt the most
	// not refused for one attempt (goal: 1).
	SessionHandovers       int `json:"sessionHandovers"`
	RefusedHandovers       int `json:"refusedHandovers"`
	SessionPods            int `json:"sessionPods"`
	MaxHandoversPerAttempt int `json:"maxHandoversPerAttempt"`
	// EndedByKill counts the calls that ended their Expectation's IfKilled way, an operator
	// kill having fallen while they ran.
	EndedByKill int `json:"endedByKill"`
	// EndedByKillNotHandedOver counts those of them whose last attempt no session Pod ever
	// received (History.SessionHandovers): the body never ran, yet the outcome is reported
	// unknown. On a real cluster, where no handover is recorded, it counts them all.
	EndedByKillNotHandedOver int `json:"endedByKillNotHandedOver"`
	// SuspendedJobs counts the Jobs first seen suspended (waiting for admission),
	// ResumedJobs those of them later seen resumed, MaxAdmissionWait the longest from a
	// Job's creation to its resume being seen; NotAdmitted the calls that ended NotAdmitted.
	SuspendedJobs    int           `json:"suspendedJobs"`
	ResumedJobs      int           `json:"resumedJobs"`
	MaxAdmissionWait time.Duration `json:"maxAdmissionWaitNanos"`
	NotAdmitted      int           `json:"notAdmitted"`
	// Versions is the length of the ToolCall watch history, WatchGaps its re-lists, Events
	// the Events read.
	Versions  int `json:"versions"`
	WatchGaps int `json:"watchGaps"`
	Events    int `json:"events"`
	// Outcomes counts the calls by final phase/reason, Scenarios by scripted scenario.
	Outcomes  map[string]int `json:"outcomes"`
	Scenarios map[string]int `json:"scenarios"`
	// ScenarioOutcomes counts each scenario's calls by final phase/reason.
	ScenarioOutcomes map[string]map[string]int `json:"scenarioOutcomes,omitempty"`
	// Violations are the broken promises; ViolationsByRule counts them per rule.
	Violations       []Violation    `json:"violations"`
	ViolationsByRule map[string]int `json:"violationsByRule"`
}

// OK reports whether no rule was broken.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// Print writes the report as a table: one line per check with its figure and goal, then
// the outcomes, then up to 50 violations.
func (r Report) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	v := func(rules ...string) int {
		n := 0
		for _, rule := range rules {
			n += r.ViolationsByRule[rule]
		}
		return n
	}
	perAttempt := func(n, max int) string {
		if r.Attempts == 0 {
			return fmt.Sprintf("max %d (%d)", max, n)
		}
		return fmt.Sprintf("max %d (%d / %d attempts = %.3f)", max, n, r.Attempts, float64(n)/float64(r.Attempts))
	}
	_, _ = fmt.Fprintln(tw, "check\tfigure\tgoal\tviolations")
	rows := [][]string{
		{"calls terminal / total", fmt.Sprintf("%d / %d", r.Terminal, r.Calls), "all", fmt.Sprint(v(RuleLost, RuleNotTerminal))},
		{"max time to terminal after the last fault", fmt.Sprintf("%s (%d calls ended after it)", r.MaxTimeToTerminal.Round(time.Millisecond), r.TerminalAfterLastFault), "bounded", fmt.Sprint(v(RuleTerminalLate))},
		{"Jobs per attempt", perAttempt(r.Jobs, r.MaxJobsPerAttempt), "≤ 1", fmt.Sprint(v(RuleJobsPerAttempt))},
		{"Pod starts per attempt", perAttempt(r.PodStarts, r.MaxPodStartsPerAttempt), "≤ 1", fmt.Sprint(v(RulePodStartsPerAttempt))},
		{"session handovers per attempt (not refused)", fmt.Sprintf("max %d (%d handovers, %d refused)", r.MaxHandoversPerAttempt, r.SessionHandovers, r.RefusedHandovers), "≤ 1", fmt.Sprint(v(RuleHandoversPerAttempt))},
		{"sessions per session Pod", fmt.Sprintf("%d session Pods", r.SessionPods), "1", fmt.Sprint(v(RuleSessionPodShared))},
		{"attempts per call", fmt.Sprintf("max %d", r.MaxAttemptsPerCall), "≤ retry policy", fmt.Sprint(v(RuleAttempts))},
		{"results changed after written", fmt.Sprintf("%d versions watched, %d re-lists, %d events", r.Versions, r.WatchGaps, r.Events), "0", fmt.Sprint(v(RuleResultChanged))},
		{"verdicts raised after a Deny", "", "0", fmt.Sprint(v(RuleVerdictAfterDeny))},
		{"approvals used twice", fmt.Sprintf("%d calls decided by an approval", r.ApprovalDecisions), "0", fmt.Sprint(v(RuleApprovalReused))},
		{"outcome differs from the script", fmt.Sprintf("%d ended as allowed only after a kill while they ran (%d never handed over)", r.EndedByKill, r.EndedByKillNotHandedOver), "0", fmt.Sprint(v(RuleOutcome))},
		{"denied calls that ran", "", "0", fmt.Sprint(v(RuleRanWhenDenied))},
		{"Pods of suspended Jobs", fmt.Sprintf("%d Jobs created suspended, %d resumed (longest wait %s)", r.SuspendedJobs, r.ResumedJobs, r.MaxAdmissionWait.Round(100*time.Millisecond)), "0", fmt.Sprint(v(RuleStartedSuspended))},
		{"NotAdmitted calls that ran or kept their Job", fmt.Sprintf("%d calls NotAdmitted", r.NotAdmitted), "0", fmt.Sprint(v(RuleNotAdmittedRan))},
	}
	for _, row := range rows {
		_, _ = fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
	_, _ = fmt.Fprintf(w, "\noutcomes: %s\n", counts(r.Outcomes))
	if len(r.Scenarios) > 0 {
		_, _ = fmt.Fprintf(w, "scenarios: %s\n", counts(r.Scenarios))
	}
	for _, sc := range slices.Sorted(maps.Keys(r.ScenarioOutcomes)) {
		if len(r.ScenarioOutcomes[sc]) > 1 { // the scenarios that ended more than one way
			_, _ = fmt.Fprintf(w, "  %s ended: %s\n", sc, counts(r.ScenarioOutcomes[sc]))
		}
	}
	if r.OK() {
		_, _ = fmt.Fprintln(w, "\nno violations")
		return
	}
	_, _ = fmt.Fprintf(w, "\n%d violations:\n", len(r.Violations))
	for i, viol := range r.Violations {
		if i == 50 {
			_, _ = fmt.Fprintf(w, "  … and %d more\n", len(r.Violations)-50)
			break
		}
		_, _ = fmt.Fprintf(w, "  [%s] %s: %s\n", viol.Rule, viol.Call, viol.Detail)
	}
}

func counts(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
