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
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

// High availability (issue 12, item 5): the operator runs two replicas, one leader and
// one warm standby. While a stream of calls of the example tools runs, the leader is
// SIGKILLed (its process only: the Lease is not released and must expire), its Pod is
// deleted (a graceful stop: the Lease is released) and deleted with grace period 0; before
// each fault both replicas are Ready, so a standby is there to take over. The shared
// checker (test/chaos/check) then reads the whole history — every call terminal in the
// bound, at most one Job and one Pod start per attempt, no result changed, nothing ran
// that was denied — and the takeover times are reported: from the fault to the new
// holder's acquisition (seen on a watch of the Lease, and the acquireTime it wrote) and
// on to the first call the new leader moved. docs/reliability.md has the figures.

// haFaultPlan: the leader SIGKILLed, deleted, force-deleted.
var haFaultPlan = []faultKind{faultKill, faultDelete, faultForce}

// haSettingsFromEnv: HA_E2E_CALLS (default 45) calls at HA_E2E_RATE (default 1/s) in one
// wave per fault, the leader given HA_E2E_FAULT_EVERY (default 4 s) before each fault,
// every call terminal within HA_E2E_BOUND (default 2 min) of the last; HA_E2E_SEED.
func haSettingsFromEnv() chaosSettings {
	dir := filepath.Join(root, ".cluster", "ha-e2e")
	s := chaosSettings{Calls: 45, Rate: 1, Every: 4 * time.Second, Seed: rand.Uint64(), Bound: 2 * time.Minute,
		Report: filepath.Join(dir, "report.json"), OperatorLog: filepath.Join(dir, "operator.log")}
	s.overrideFromEnv("HA_E2E_")
	s.Wave = (s.Calls + len(haFaultPlan) - 1) / len(haFaultPlan)
	return s
}

var _ = Describe("high availability", Label("ha", "disruptive"), Serial, func() {
	It("a standby takes over from a killed or deleted leader: every call ends once, none lost, none run twice", func(ctx SpecContext) {
		settings := haSettingsFromEnv()
		prefix := "ha-" + utilrand.String(4)
		AddReportEntry("ha settings", fmt.Sprintf("%+v prefix=%s", settings, prefix))
		By("two operator replicas Ready, one of them the leader")
		waitOperatorAvailable(ctx)
		pods, err := operatorPods(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(pods)).To(BeNumerically(">=", 2), "the chart runs two replicas")
		rec := prepareChaos(ctx, settings.OperatorLog, prefix)

		plan := chaosPlan(prefix, settings.Calls, settings.Seed)
		run := &chaosRun{settings: settings, rec: rec, plan: plan, prefix: prefix, faultPlan: haFaultPlan,
			beforeFault: func(ctx context.Context) { waitOperatorAvailable(ctx) }}
		start := time.Now()
		faults := run.drive(ctx)
		report := run.check(ctx, faults)
		run.progressOf(faults)
		var table strings.Builder
		report.Print(&table)
		figures := haFiguresOf(faults, time.Since(start))
		AddReportEntry("ha takeover", figures.String()+"\n"+table.String(), ReportEntryVisibilityAlways)
		writeReport(settings.Report, map[string]any{"takeovers": figures, "report": report})
		AddReportEntry("ha files", settings.Report+", operator logs "+settings.OperatorLog)
		Expect(report.Violations).To(BeEmpty(), table.String()+"\n"+violationDetails(report, rec))
		for _, f := range faults {
			Expect(f.NewHolder).NotTo(BeEmpty(), "a new leader after %s of %s", f.Kind, f.Pod)
			Expect(f.NewHolder).NotTo(Equal(f.Holder), "after %s of %s", f.Kind, f.Pod)
			Expect(f.Progress.IsZero()).To(BeFalse(), "a call moved by the new leader %s after %s", f.NewHolder, f.Kind)
		}
	}, SpecTimeout(10*time.Minute))
})

// haTakeover is one fault of the HA run and what it cost.
type haTakeover struct {
	Fault     faultKind `json:"fault"`
	Pod       string    `json:"pod"`
	NewLeader string    `json:"newLeader"`
	// Standby: the new leader is a replica that was live before the fault (not the
	// faulted Pod restarted, nor the Pod the Deployment started in its place).
	Standby bool `json:"standby"`
	// ToAcquire: the fault to the new holder seen on the Lease watch; ToAcquireTime: to
	// the acquireTime it wrote (its own clock, this machine's); ToProgress: the new holder
	// seen to the first call it moved.
	ToAcquire     time.Duration `json:"toAcquireNanos"`
	ToAcquireTime time.Duration `json:"toAcquireTimeNanos"`
	ToProgress    time.Duration `json:"toProgressNanos"`
}

type haFigures struct {
	Wall      time.Duration `json:"wallNanos"`
	Takeovers []haTakeover  `json:"takeovers"`
}

func haFiguresOf(faults []fault, wall time.Duration) haFigures {
	f := haFigures{Wall: wall}
	for _, ft := range faults {
		t := haTakeover{Fault: ft.Kind, Pod: ft.Pod, NewLeader: podOfHolder(ft.NewHolder), ToAcquire: -1, ToAcquireTime: -1, ToProgress: -1}
		t.Standby = slices.Contains(ft.Standbys, t.NewLeader)
		if !ft.Takeover.IsZero() {
			t.ToAcquire = ft.Takeover.Sub(ft.At)
		}
		if !ft.Acquired.IsZero() {
			t.ToAcquireTime = ft.Acquired.Sub(ft.At)
		}
		if !ft.Progress.IsZero() && !ft.Takeover.IsZero() {
			t.ToProgress = ft.Progress.Sub(ft.Takeover)
		}
		f.Takeovers = append(f.Takeovers, t)
	}
	return f
}

func (f haFigures) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "wall %s\n%-13s %-27s %-27s %-8s %-12s %-14s %s\n", f.Wall.Round(time.Second),
		"fault", "leader faulted", "new leader", "standby", "to acquire", "(acquireTime)", "then first call moved")
	r := func(d time.Duration) string {
		if d < 0 {
			return "-"
		}
		return d.Round(10 * time.Millisecond).String()
	}
	for _, t := range f.Takeovers {
		fmt.Fprintf(&b, "%-13s %-27s %-27s %-8t %-12s %-14s %s\n", t.Fault, t.Pod, t.NewLeader, t.Standby,
			r(t.ToAcquire), r(t.ToAcquireTime), r(t.ToProgress))
	}
	return b.String()
}
