package check

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// goodAdmission is good() plus two calls behind admission that keep every promise:
// "queued", whose Job waited suspended (resourceVersion 40) until the simulated Kueue
// resumed it (42) and whose Pod came after (43), then succeeded; and "unserved", whose Job
// on a queue nobody serves was never resumed, was deleted, and whose call ended
// Failed/NotAdmitted without a Pod.
func goodAdmission() History {
	h := good()
	queued := call("queued", v1alpha1.PhaseSucceeded, v1alpha1.VerdictAllow, 1, ok(`{}`))
	unserved := call("unserved", v1alpha1.PhaseFailed, v1alpha1.VerdictAllow, 1, failed(v1alpha1.ReasonNotAdmitted))
	jq := job(queued, 1, "jq")
	jq.Queue, jq.Created = "served", t0
	jq.Versions = []JobVersion{{ResourceVersion: "40", Suspended: true, Observed: t0}, {ResourceVersion: "42", Observed: t0.Add(3 * time.Second)}}
	ju := job(unserved, 1, "ju")
	ju.Queue, ju.Created, ju.Deleted = "nobody", t0, true
	ju.Versions = []JobVersion{{ResourceVersion: "41", Suspended: true, Observed: t0}}
	pq := start(queued, 1)
	pq.Pod, pq.JobUID, pq.ResourceVersion = "p-queued", "jq", "43"
	h.Calls = append(h.Calls, queued, unserved)
	h.Versions = append(h.Versions, version(queued, "44", 5*time.Second), version(unserved, "45", 6*time.Second))
	h.Jobs = append(h.Jobs, jq, ju)
	h.PodStarts = append(h.PodStarts, start(queued, 1))
	h.Pods = []PodStart{pq}
	h.Expectations[types.NamespacedName{Namespace: ns, Name: "queued"}] = Expectation{Scenario: "queued", Phase: v1alpha1.PhaseSucceeded, Reasons: succeeded}
	h.Expectations[types.NamespacedName{Namespace: ns, Name: "unserved"}] = Expectation{Scenario: "not-admitted", Phase: v1alpha1.PhaseFailed,
		Reasons: []string{v1alpha1.ReasonNotAdmitted}}
	return h
}

func TestGoodAdmissionHistoryHasNoViolations(t *testing.T) {
	rep := Check(goodAdmission())
	if !rep.OK() {
		t.Fatalf("violations in a good history: %+v", rep.Violations)
	}
	if rep.SuspendedJobs != 2 || rep.ResumedJobs != 1 || rep.MaxAdmissionWait != 3*time.Second || rep.NotAdmitted != 1 {
		t.Errorf("figures: %+v", rep)
	}
	var out bytes.Buffer
	rep.Print(&out)
	for _, want := range []string{"2 Jobs created suspended, 1 resumed (longest wait 3s)", "1 calls NotAdmitted"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// Each case breaks one admission promise in goodAdmission; exactly that rule must fire.
func TestEachAdmissionRuleCanFail(t *testing.T) {
	cases := []struct {
		name   string
		rule   string
		break_ func(h *History)
	}{
		{"a Pod appeared while its Job was suspended", RuleStartedSuspended, func(h *History) { h.Pods[0].ResourceVersion = "41" }},
		{"a Pod appeared while its Job was suspended again", RuleStartedSuspended, func(h *History) {
			jq := &h.Jobs[len(h.Jobs)-2]
			jq.Versions = append(jq.Versions, JobVersion{ResourceVersion: "43", Suspended: true})
			h.Pods[0].ResourceVersion = "50"
		}},
		{"a Pod of a Job never resumed", RuleStartedSuspended, func(h *History) {
			p := start(h.Calls[len(h.Calls)-1], 1)
			p.Pod, p.JobUID, p.ResourceVersion = "p-unserved", "ju", "46"
			h.Pods = append(h.Pods, p)
			h.Calls[len(h.Calls)-1].Status.Result = failed(v1alpha1.ReasonNonZeroExit) // not NotAdmitted: only the first rule
			dropVersions(h, "unserved")
			h.Expectations[types.NamespacedName{Namespace: ns, Name: "unserved"}] = Expectation{Scenario: "x", Phase: v1alpha1.PhaseFailed,
				Reasons: []string{v1alpha1.ReasonNonZeroExit}}
		}},
		{"a NotAdmitted call whose body started (the kubelet's record)", RuleNotAdmittedRan, func(h *History) {
			h.PodStarts = append(h.PodStarts, start(h.Calls[len(h.Calls)-1], 1))
		}},
		{"a NotAdmitted call whose Pod was seen", RuleNotAdmittedRan, func(h *History) {
			p := start(h.Calls[len(h.Calls)-1], 1)
			p.Pod, p.CallUID = "p-unserved", "" // matched by the call's name
			h.Pods = append(h.Pods, p)
		}},
		{"a NotAdmitted call handed to a session Pod", RuleNotAdmittedRan, func(h *History) {
			h.SessionHandovers = append(h.SessionHandovers, handover(h.Calls[len(h.Calls)-1], "pod-a", 1, true))
		}},
		{"a NotAdmitted call whose Job was never deleted", RuleNotAdmittedRan, func(h *History) { h.Jobs[len(h.Jobs)-1].Deleted = false }},
		// The tool's timeout counts from admission: an admission call whose script succeeds
		// and that ended DeadlineExceeded (its timeout spent waiting) is an outcome violation.
		{"an admission call that timed out while it waited", RuleOutcome, func(h *History) {
			q := &h.Calls[len(h.Calls)-2]
			q.Status.Phase, q.Status.Result = v1alpha1.PhaseFailed, failed(v1alpha1.ReasonDeadlineExceeded)
			dropVersions(h, "queued")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := goodAdmission()
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
			var out bytes.Buffer
			rep.Print(&out)
			if !strings.Contains(out.String(), "["+tc.rule+"]") {
				t.Errorf("the printed report does not list the violation:\n%s", out.String())
			}
		})
	}
}

// A Job whose watch re-listed may be missing its resume: it is not judged.
func TestARelistedJobIsNotJudged(t *testing.T) {
	h := goodAdmission()
	h.Jobs[len(h.Jobs)-2].Versions = h.Jobs[len(h.Jobs)-2].Versions[:1] // the resume fell in the gap
	h.Jobs[len(h.Jobs)-2].Relisted = true
	if rep := Check(h); !rep.OK() {
		t.Errorf("violations: %+v", rep.Violations)
	}
	h.Jobs[len(h.Jobs)-2].Relisted = false
	if rep := Check(h); rep.ViolationsByRule[RuleStartedSuspended] != 1 {
		t.Errorf("without the gap the rule must fire: %+v", rep.Violations)
	}
}
