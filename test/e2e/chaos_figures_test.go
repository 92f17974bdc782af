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
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/test/chaos/check"
)

// chaosFigures are the run's figures for docs/reliability.md ("Chaos (real cluster)").
type chaosFigures struct {
	Calls                  int               `json:"calls"`
	Seed                   uint64            `json:"seed"`
	Rate                   float64           `json:"rate"`
	Faults                 map[faultKind]int `json:"faults"`
	Wall                   time.Duration     `json:"wallNanos"`
	MaxToTerminal          time.Duration     `json:"maxTimeToTerminalAfterLastFaultNanos"`
	Slowest                string            `json:"slowest"`
	Attempts               int               `json:"attempts"`
	Jobs                   int               `json:"jobs"`
	PodStarts              int               `json:"podStarts"`
	MaxJobsPerAttempt      int               `json:"maxJobsPerAttempt"`
	MaxPodStartsPerAttempt int               `json:"maxPodStartsPerAttempt"`
	Pods                   int               `json:"pods"`
	PodsNeverStarted       int               `json:"podsNeverStarted"`
	Violations             int               `json:"violations"`
	WatchGaps              int               `json:"watchGaps"`
	// Takeover per fault kind: from the fault to the next leader seen renewing the Lease
	// (for the API server restart: from ready again to a renewal); min, median, max.
	Takeover map[faultKind][3]time.Duration `json:"takeoverNanos"`
	// APIServerDown is how long hack/cluster.sh restart kube-apiserver took (stop to ready).
	APIServerDown time.Duration  `json:"apiserverDownNanos"`
	Outcomes      map[string]int `json:"outcomes"`
}

func chaosFiguresOf(s chaosSettings, faults []fault, rep check.Report, wall time.Duration, rec *recorder) chaosFigures {
	f := chaosFigures{Calls: s.Calls, Seed: s.Seed, Rate: s.Rate, Faults: map[faultKind]int{}, Wall: wall,
		MaxToTerminal: rep.MaxTimeToTerminal, Slowest: rep.SlowestAfterLastFault, Attempts: rep.Attempts,
		Jobs: rep.Jobs, PodStarts: rep.PodStarts, MaxJobsPerAttempt: rep.MaxJobsPerAttempt,
		MaxPodStartsPerAttempt: rep.MaxPodStartsPerAttempt, Violations: len(rep.Violations),
		WatchGaps: rep.WatchGaps, Takeover: map[faultKind][3]time.Duration{}, Outcomes: rep.Outcomes}
	f.Pods, f.PodsNeverStarted = rec.podStats()
	byKind := map[faultKind][]time.Duration{}
	for _, ft := range faults {
		f.Faults[ft.Kind]++
		byKind[ft.Kind] = append(byKind[ft.Kind], ft.takeover())
		if ft.Kind == faultAPIServer {
			f.APIServerDown = ft.Done.Sub(ft.At)
		}
	}
	for k, ds := range byKind {
		slices.Sort(ds)
		f.Takeover[k] = [3]time.Duration{ds[0], ds[len(ds)/2], ds[len(ds)-1]}
	}
	return f
}

func (f chaosFigures) String() string {
	var b strings.Builder
	per := func(n int) string {
		if f.Attempts == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", float64(n)/float64(f.Attempts))
	}
	fmt.Fprintf(&b, "calls %d (seed %d, %.1f/s), wall %s, faults %v\n", f.Calls, f.Seed, f.Rate, f.Wall.Round(time.Second), f.Faults)
	fmt.Fprintf(&b, "max time to terminal after the last fault %s (%s)\n", f.MaxToTerminal.Round(time.Millisecond), f.Slowest)
	fmt.Fprintf(&b, "attempts %d, Jobs %d (%s/attempt, max %d), Pod starts %d (%s/attempt, max %d), Pods %d (%d never started)\n",
		f.Attempts, f.Jobs, per(f.Jobs), f.MaxJobsPerAttempt, f.PodStarts, per(f.PodStarts), f.MaxPodStartsPerAttempt,
		f.Pods, f.PodsNeverStarted)
	for _, k := range []faultKind{faultDelete, faultForce, faultKill, faultAPIServer} {
		if t, ok := f.Takeover[k]; ok {
			fmt.Fprintf(&b, "takeover after %s: min %s, median %s, max %s\n", k,
				t[0].Round(100*time.Millisecond), t[1].Round(100*time.Millisecond), t[2].Round(100*time.Millisecond))
		}
	}
	fmt.Fprintf(&b, "kube-apiserver restart (stop to ready) %s; watch re-lists %d; violations %d\n",
		f.APIServerDown.Round(100*time.Millisecond), f.WatchGaps, f.Violations)
	return b.String()
}

// violationDetails describes, for each call a violation names, where it ended: phase,
// attempts, conditions, result and the Pods seen, for the failure report.
func violationDetails(rep check.Report, rec *recorder) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, v := range rep.Violations {
		_, name, _ := strings.Cut(v.Call, "/")
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		call := rec.lastOf(name)
		if call == nil {
			fmt.Fprintf(&b, "%s: never seen\n", name)
			continue
		}
		st := call.Status
		fmt.Fprintf(&b, "%s (tool %s, session %q): phase %s verdict %s, %d attempts\n", name, call.Spec.Tool,
			call.Spec.Session, st.Phase, st.Verdict, len(st.Attempts))
		for _, a := range st.Attempts {
			fmt.Fprintf(&b, "  attempt %d job %s start %v end %v reason %s\n", a.Attempt, a.JobName, a.StartTime, a.CompletionTime, a.Reason)
		}
		for _, c := range st.Conditions {
			fmt.Fprintf(&b, "  %s=%s %s %s: %s\n", c.Type, c.Status, c.LastTransitionTime.Format(time.TimeOnly), c.Reason, c.Message)
		}
		if st.Result != nil {
			fmt.Fprintf(&b, "  result reason %s error %q meta %v\n", st.Result.Reason, st.Result.Error, st.Result.Meta)
		}
		rec.mu.Lock()
		for _, p := range rec.pods {
			if p.Call == name {
				fmt.Fprintf(&b, "  pod %s attempt %d started %t at %s restarts %d\n", p.Name, p.Attempt, p.Started,
					p.StartedAt.Format(time.TimeOnly), p.Restarts)
			}
		}
		rec.mu.Unlock()
	}
	return b.String()
}
