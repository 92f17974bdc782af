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
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/chaos/check"
)

// The real-cluster chaos run (issue 11, part 2): calls of the example tools while the
// operator Pod is deleted again and again (once with grace period 0, once its container
// SIGKILLed) and kube-apiserver is restarted once by hack/cluster.sh, with the real Job
// controller and kubelet; then the shared checker (test/chaos/check) reads the whole
// history. make test runs the short variant (label chaos, CHAOS_E2E_CALLS default 48);
// make chaos-e2e the full one (200 calls). docs/reliability.md has the figures.

// chaosSettings come from the environment (make chaos-e2e sets them).
type chaosSettings struct {
	Calls int           // CHAOS_E2E_CALLS (default 48)
	Rate  float64       // CHAOS_E2E_RATE, calls created per second (default 1.5)
	Every time.Duration // CHAOS_E2E_FAULT_EVERY, leadership time between faults (default 5s)
	Wave  int           // CHAOS_E2E_WAVE, calls per fault beyond the planned faults (default 12)
	Seed  uint64        // CHAOS_E2E_SEED (default: random, reported)
	// Report is a file the figures and the checker's report go to (JSON), OperatorLog the
	// file every operator container's log goes to (default: .cluster/chaos-e2e/).
	Report      string // CHAOS_E2E_REPORT
	OperatorLog string // CHAOS_E2E_OPERATOR_LOG
	// Bound is how long after the last fault every call must be terminal.
	Bound time.Duration // CHAOS_E2E_BOUND (default 3m)
}

func chaosSettingsFromEnv() chaosSettings {
	s := chaosSettings{Calls: 48, Rate: 1.5, Every: 5 * time.Second, Wave: 12, Seed: rand.Uint64(),
		Report: os.Getenv("CHAOS_E2E_REPORT"), OperatorLog: os.Getenv("CHAOS_E2E_OPERATOR_LOG"), Bound: 3 * time.Minute}
	dir := filepath.Join(root, ".cluster", "chaos-e2e")
	if s.Report == "" {
		s.Report = filepath.Join(dir, "report.json")
	}
	if s.OperatorLog == "" {
		s.OperatorLog = filepath.Join(dir, "operator.log")
	}
	s.overrideFromEnv("CHAOS_E2E_")
	return s
}

// overrideFromEnv replaces the settings given in the environment as <prefix>CALLS, RATE,
// WAVE, FAULT_EVERY, SEED and BOUND; unset or invalid values keep the defaults.
func (s *chaosSettings) overrideFromEnv(prefix string) {
	if v, err := strconv.Atoi(os.Getenv(prefix + "CALLS")); err == nil && v > 0 {
		s.Calls = v
	}
	if v, err := strconv.ParseFloat(os.Getenv(prefix+"RATE"), 64); err == nil && v > 0 {
		s.Rate = v
	}
	if v, err := strconv.Atoi(os.Getenv(prefix + "WAVE")); err == nil && v > 0 {
		s.Wave = v
	}
	if v, err := time.ParseDuration(os.Getenv(prefix + "FAULT_EVERY")); err == nil && v > 0 {
		s.Every = v
	}
	if v, err := strconv.ParseUint(os.Getenv(prefix+"SEED"), 10, 64); err == nil {
		s.Seed = v
	}
	if v, err := time.ParseDuration(os.Getenv(prefix + "BOUND")); err == nil && v > 0 {
		s.Bound = v
	}
}

// chaosFaultPlan: the faults in order; after them operator Pod deletions, one per wave of
// calls (CHAOS_E2E_WAVE, default 12): each wave is created just before its fault, so every
// fault hits calls in flight.
var chaosFaultPlan = []faultKind{faultDelete, faultForce, faultDelete, faultAPIServer, faultDelete, faultKill}

// chaosWaves splits n calls into one wave per fault: at least one fault of each of the
// planned kinds, and a fault per wave calls beyond that.
func chaosWaves(n, wave, planned int) []int {
	faults := max(planned, (n+wave-1)/wave)
	waves := make([]int, faults)
	for i := range waves {
		waves[i] = n / faults
		if i < n%faults {
			waves[i]++
		}
	}
	return waves
}

const chaosRunLabel = "toolgate.dev/chaos-run"

var _ = Describe("chaos on the real cluster", Label("chaos", "disruptive"), Serial, func() {
	It("every call ends once, as scripted, while the operator is deleted, killed and the API server restarted", func(ctx SpecContext) {
		settings := chaosSettingsFromEnv()
		prefix := "chaos-" + utilrand.String(4)
		AddReportEntry("chaos settings", fmt.Sprintf("%+v prefix=%s", settings, prefix))
		rec := prepareChaos(ctx, settings.OperatorLog, prefix)

		plan := chaosPlan(prefix, settings.Calls, settings.Seed)
		run := &chaosRun{settings: settings, rec: rec, plan: plan, prefix: prefix, faultPlan: chaosFaultPlan}
		start := time.Now()
		faults := run.drive(ctx)
		report := run.check(ctx, faults)
		var table strings.Builder
		report.Print(&table)
		figures := chaosFiguresOf(settings, faults, report, time.Since(start), rec)
		AddReportEntry("chaos figures", figures.String()+"\n"+table.String(), ReportEntryVisibilityAlways)
		writeReport(settings.Report, map[string]any{"figures": figures, "report": report})
		AddReportEntry("chaos files", settings.Report+", operator logs "+settings.OperatorLog)
		Expect(report.Violations).To(BeEmpty(), table.String()+"\n"+violationDetails(report, rec))
	}, SpecTimeout(30*time.Minute))
})

// prepareChaos sets a run up: the run's tools and ask policy, the example tools' timeouts
// raised (restored afterwards), every operator container's log followed into operatorLog,
// the recorder started, and, when the spec ends, the run's calls deleted and the operator
// whole again.
func prepareChaos(ctx context.Context, operatorLog, prefix string) *recorder {
	GinkgoHelper()
	DeferCleanup(func(ctx SpecContext) { waitOperatorAvailable(ctx) })
	for _, t := range chaosTools() {
		createTool(ctx, t)
	}
	for _, name := range chaosRetimed {
		retimeTool(ctx, name, chaosToolTimeout)
	}
	policy := chaosAskPolicy()
	metav1.SetMetaDataLabel(&policy.ObjectMeta, e2eLabel, "true")
	Expect(admin.Create(ctx, policy)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, policy))).To(Succeed()) })
	Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(policy), policy)).To(Succeed())
		g.Expect(policy).To(toolgatetest.HaveCondition(toolgatev1alpha1.ConditionReady, metav1.ConditionTrue, ""))
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())

	cfg, err := clientcmd.BuildConfigFromFlags("", adminCfg)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.MkdirAll(filepath.Dir(operatorLog), 0o755)).To(Succeed())
	logFile, err := os.Create(operatorLog)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(logFile.Close)
	logs, err := newOperatorLogs(cfg, logFile)
	Expect(err).NotTo(HaveOccurred())
	logsCtx, stopLogs := context.WithCancel(context.Background())
	DeferCleanup(stopLogs)
	go logs.run(logsCtx)
	rec := newRecorder(prefix + "-")
	recCtx, stopRec := context.WithCancel(context.Background())
	DeferCleanup(stopRec)
	Expect(rec.start(recCtx, cfg)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(admin.DeleteAllOf(ctx, &toolgatev1alpha1.ToolCall{}, client.InNamespace(demoNS),
			client.MatchingLabels{chaosRunLabel: prefix})).To(Succeed())
	})
	return rec
}

// check waits (up to settings.Bound) for every call of the run to end, then reads the
// whole history and returns the shared checker's report. It fails the spec on a fault
// that could not be injected or a call that could not be created.
func (r *chaosRun) check(ctx context.Context, faults []fault) check.Report {
	GinkgoHelper()
	for _, f := range faults {
		Expect(f.Err).NotTo(HaveOccurred(), "fault %s at %s", f.Kind, f.At.Format(time.TimeOnly))
	}
	Expect(r.createErrs).To(BeEmpty(), "calls the run could not create")

	By("waiting for every call to end")
	Eventually(r.rec.terminalCount).WithContext(ctx).WithTimeout(r.settings.Bound).WithPolling(time.Second).
		Should(Equal(len(r.plan)), "calls terminal")
	hist, err := r.rec.history(ctx, admin)
	Expect(err).NotTo(HaveOccurred())
	hist.Expectations = map[types.NamespacedName]check.Expectation{}
	for _, c := range r.plan {
		hist.Expectations[types.NamespacedName{Namespace: demoNS, Name: c.Name}] = c.Expect
	}
	hist.LastFault, hist.TerminalBound = faults[len(faults)-1].Done, r.settings.Bound
	if errs := r.rec.watchErrors(); len(errs) > 0 {
		AddReportEntry("chaos recorder watch errors", fmt.Sprint(errs))
	}
	return check.Check(hist)
}

// writeReport writes v as indented JSON to path (its folder made if needed).
func writeReport(path string, v any) {
	GinkgoHelper()
	data, err := json.MarshalIndent(v, "", "  ")
	Expect(err).NotTo(HaveOccurred())
	Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
	Expect(os.WriteFile(path, data, 0o644)).To(Succeed())
}

// chaosRun creates the calls, answers the approvals and injects the faults.
type chaosRun struct {
	settings chaosSettings
	rec      *recorder
	plan     []chaosCall
	prefix   string
	// faultPlan are the faults in order; beyond them, faultDelete. beforeFault, when set,
	// runs before each fault (the HA run waits for a standby).
	faultPlan   []faultKind
	beforeFault func(ctx context.Context)

	mu         sync.Mutex
	created    int
	createErrs []error
}

// drive runs the creator and the approver alongside the faults: before each fault it
// releases the next wave of calls. It returns the faults once every call is created.
func (r *chaosRun) drive(ctx context.Context) []fault {
	GinkgoHelper()
	waves := chaosWaves(len(r.plan), r.settings.Wave, len(r.faultPlan))
	release := make(chan int, len(waves))
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		r.createAll(ctx, release)
	}()
	approverCtx, stopApprover := context.WithCancel(ctx)
	DeferCleanup(stopApprover)
	go func() {
		defer GinkgoRecover()
		r.approve(approverCtx)
	}()

	var faults []fault
	for i, n := range waves {
		if ctx.Err() != nil {
			break
		}
		release <- n
		kind := faultDelete
		if i < len(r.faultPlan) {
			kind = r.faultPlan[i]
		}
		// Each leader gets about settings.Every (±20 %) before the next fault.
		jitter := time.Duration(float64(r.settings.Every) * (0.8 + 0.4*rand.Float64()))
		select {
		case <-ctx.Done():
		case <-time.After(jitter):
		}
		if r.beforeFault != nil {
			r.beforeFault(ctx)
		}
		f := inject(ctx, r.rec, kind)
		waitTakeover(ctx, r.rec, &f, 2*time.Minute)
		GinkgoWriter.Printf("fault %-17s at %s on %s: took %s, takeover by %s after %s (%d/%d calls created, %d terminal)\n",
			f.Kind, f.At.Format("15:04:05.000"), f.Pod, f.Done.Sub(f.At).Round(time.Millisecond), podOfHolder(f.NewHolder),
			f.takeover().Round(time.Millisecond), r.createdCount(), len(r.plan), r.rec.terminalCount())
		faults = append(faults, f)
	}
	close(release)
	<-done
	return faults
}

// progressOf sets each fault's Progress once the run is over: the first call seen changed
// after its takeover and before the next fault (else the next leader's work).
func (r *chaosRun) progressOf(faults []fault) {
	for i := range faults {
		if faults[i].Takeover.IsZero() {
			continue
		}
		at, ok := r.rec.progressAfter(faults[i].Takeover)
		if ok && (i+1 == len(faults) || at.Before(faults[i+1].At)) {
			faults[i].Progress = at
		}
	}
}

func (r *chaosRun) createdCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.created
}

// createAll creates the calls as the agent user at settings.Rate, as many as each release
// allows, each retried until the API server has it (the names are fixed, so AlreadyExists
// after a lost answer means created).
func (r *chaosRun) createAll(ctx context.Context, release <-chan int) {
	gap := time.Duration(float64(time.Second) / r.settings.Rate)
	var next time.Time
	allowed := 0
	for _, c := range r.plan {
		for allowed == 0 {
			n, ok := <-release
			if !ok {
				return
			}
			allowed, next = n, time.Now()
		}
		allowed--
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		next = next.Add(gap)
		call := toolgatetest.MakeToolCall(c.Name, demoNS).Tool(c.Tool).Scope(c.Scope).Requester("agent").
			Args(c.Args).Label(e2eLabel, "true").Label(chaosRunLabel, r.prefix).Obj()
		if c.Session != "" {
			call.Spec.Session = c.Session
		}
		err := retryAPI(ctx, 2*time.Minute, func() error {
			err := agent.Create(ctx, call.DeepCopy())
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
		r.mu.Lock()
		if err != nil {
			r.createErrs = append(r.createErrs, fmt.Errorf("%s: %w", c.Name, err))
		}
		r.created++
		r.mu.Unlock()
	}
}

// approve answers, as the approver user, every call the script approves or denies once it
// is seen awaiting approval; calls scripted Unanswered are left to their window.
func (r *chaosRun) approve(ctx context.Context) {
	answered := map[string]bool{}
	for ctx.Err() == nil {
		for _, c := range r.plan {
			if answered[c.Name] || (c.Expect.Approval != check.Approve && c.Expect.Approval != check.Deny) {
				continue
			}
			call := r.rec.lastOf(c.Name)
			if call == nil || call.Status.Phase != toolgatev1alpha1.PhaseAwaitingApproval || call.Status.ArgumentsDigest == "" {
				continue
			}
			w := toolgatetest.MakeToolCallApproval(c.Name, demoNS).For(call).Approver("approver").
				Reason("chaos e2e: scripted " + string(c.Expect.Approval))
			if c.Expect.Approval == check.Deny {
				w = w.Deny()
			}
			err := retryAPI(ctx, time.Minute, func() error {
				err := approver.Create(ctx, w.Obj())
				if apierrors.IsAlreadyExists(err) {
					return nil
				}
				return err
			})
			if err == nil {
				answered[c.Name] = true
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// retryAPI calls fn until it succeeds, returns an error that is not the API server being
// away, or limit passes.
func retryAPI(ctx context.Context, limit time.Duration, fn func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := fn()
		if err == nil || !transient(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// transient: anything but a refusal of the object itself (Invalid, BadRequest) may be the
// API server restarting (connection refused, EOF, 5xx, 429, even a 403 while its
// authorizer warms up): retried until the limit, and the last error reported.
func transient(err error) bool {
	return !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err)
}

// retimeTool sets an example Tool's timeout for the spec and restores it afterwards; it
// waits until the tool controller registered the change (calls snapshot the Tool).
func retimeTool(ctx context.Context, name string, timeout time.Duration) {
	GinkgoHelper()
	t := &toolgatev1alpha1.Tool{}
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, t)).To(Succeed())
	set := func(ctx context.Context, d *metav1.Duration) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			cur := &toolgatev1alpha1.Tool{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, cur)).To(Succeed())
			if cur.Spec.Timeout == nil || d == nil || cur.Spec.Timeout.Duration != d.Duration {
				cur.Spec.Timeout = d
				g.Expect(admin.Update(ctx, cur)).To(Succeed())
			}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, cur)).To(Succeed())
			g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
			g.Expect(cur).To(toolgatetest.HaveCondition(toolgatev1alpha1.ConditionRegistered, metav1.ConditionTrue, ""))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
	}
	old := t.Spec.Timeout.DeepCopy()
	set(ctx, &metav1.Duration{Duration: timeout})
	DeferCleanup(func(ctx SpecContext) { set(ctx, old) })
}
