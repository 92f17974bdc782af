package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// Report is everything the benchmark measured.
type Report struct {
	Machine string `json:"machine"`
	// LoadBefore and LoadAfter are the 1-minute load averages around the calls.
	LoadBefore      string  `json:"loadAverageBefore"`
	LoadAfter       string  `json:"loadAverageAfter"`
	Calls           int     `json:"calls"`
	Concurrency     int     `json:"concurrency"`
	Rate            float64 `json:"rate,omitempty"`
	OperatorWorkers int     `json:"operatorWorkers"`
	KubeletWorkers  int     `json:"kubeletWorkers"`
	CreateSeconds   float64 `json:"createSeconds"`
	Succeeded       int     `json:"succeeded"`
	WallSeconds     float64 `json:"wallSeconds"`
	Throughput      float64 `json:"callsPerSecond"`
	// CPUSeconds is the CPU time (user + system) each process used during the calls:
	// "self" (this process), kube-apiserver, etcd and, with -operator-process, the operator.
	CPUSeconds map[string]float64 `json:"cpuSeconds,omitempty"`

	// Latencies: create → Job ADDED; Pod terminated → terminal phase; Job Complete →
	// terminal phase; create → terminal phase.
	CreateToJob      Latency     `json:"createToJob"`
	PodDoneToFrozen  Latency     `json:"podDoneToFrozen"`
	JobDoneToFrozen  Latency     `json:"jobCompleteToFrozen"`
	CreateToFrozen   Latency     `json:"createToFrozen"`
	Writes           Writes      `json:"operatorWrites"`
	OperatorRequests []KindCount `json:"operatorRequests"`
	ClusterRequests  []KindCount `json:"simulatedClusterRequests"`
	Reconciles       []KindCount `json:"reconciles"`
	// CountedRequests (operator + simulated Kubelet + harness transports) should equal
	// ClientGoRequests (rest_client_requests_total over the same window).
	CountedRequests  int    `json:"countedRequests"`
	ClientGoRequests int    `json:"clientGoRequests"`
	Memory           Memory `json:"memory"`
	// OperatorMemory is the operator process's own (with -operator-process); Memory is
	// then the harness and the simulated Kubelet only.
	OperatorMemory  *Memory   `json:"operatorMemory,omitempty"`
	OperatorProcess bool      `json:"operatorProcess"`
	Keep            bool      `json:"keep"`
	Storage         Storage   `json:"storage"`
	Prefill         *Prefill  `json:"prefill,omitempty"`
	Failures        []Failure `json:"failures,omitempty"`
	WatchErrors     []string  `json:"watchErrors,omitempty"`
}

// Writes are the operator's successful API writes, in total and per successful call.
type Writes struct {
	JobCreates   int `json:"jobCreates"`
	StatusWrites int `json:"toolCallStatusWrites"`
	Events       int `json:"events"`
	Other        int `json:"other"`
	Failed       int `json:"failedWrites"`

	JobCreatesPerCall   float64 `json:"jobCreatesPerCall"`
	StatusWritesPerCall float64 `json:"statusWritesPerCall"`
	EventsPerCall       float64 `json:"eventsPerCall"`
	OtherPerCall        float64 `json:"otherPerCall"`
	// StatusWritesHistogram: number of calls by how many status writes they took.
	StatusWritesHistogram map[string]int `json:"statusWritesHistogram"`
	// ByPhase counts the status writes (failed ones too) by the phase they wrote.
	ByPhase map[string]int `json:"statusWritesByPhase"`
	// OverBudget names (up to 10) calls with more than 2 status writes.
	OverBudget []string `json:"overBudget,omitempty"`
}

// Failure is a call that did not end Succeeded.
type Failure struct {
	Call    string `json:"call"`
	Phase   string `json:"phase"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// Timeline is what the harness's watches saw, relative to the create.
	Timeline string `json:"timeline,omitempty"`
	// Cluster is what the API server holds for the call after the run.
	Cluster string `json:"cluster,omitempty"`
}

func isJobCreate(r Request) bool {
	return r.OK && r.Verb == "create" && r.Group == "batch" && r.Resource == "jobs" && r.Subresource == ""
}
func isStatusWrite(r Request) bool {
	return r.OK && r.IsWrite() && r.Resource == "toolcalls" && r.Subresource == "status"
}
func isEvent(r Request) bool { return r.OK && r.IsWrite() && r.Resource == "events" }
func isOtherWrite(r Request) bool {
	return r.OK && r.IsWrite() && !isJobCreate(r) && !isStatusWrite(r) && !isEvent(r)
}

// fill computes the latencies, failures and writes of the report.
func (rep *Report) fill(calls map[string]callTimes, operator Counts) {
	var createToJob, podToFrozen, jobToFrozen, createToFrozen []time.Duration
	var first, last time.Time
	names := make([]string, 0, len(calls))
	for name := range calls {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := calls[name]
		if c.created.IsZero() && c.createErr == nil {
			continue // not one of ours
		}
		if first.IsZero() || c.created.Before(first) {
			first = c.created
		}
		if c.frozen.After(last) {
			last = c.frozen
		}
		if f, failed := failureOf(name, c); failed {
			rep.Failures = append(rep.Failures, f)
		} else {
			rep.Succeeded++
		}
		if !c.jobAdded.IsZero() {
			createToJob = append(createToJob, c.jobAdded.Sub(c.created))
		}
		if c.frozen.IsZero() {
			continue
		}
		createToFrozen = append(createToFrozen, c.frozen.Sub(c.created))
		if !c.podDone.IsZero() {
			podToFrozen = append(podToFrozen, c.frozen.Sub(c.podDone))
		}
		if !c.jobComplete.IsZero() {
			jobToFrozen = append(jobToFrozen, c.frozen.Sub(c.jobComplete))
		}
	}
	rep.CreateToJob, rep.PodDoneToFrozen = summarise(createToJob), summarise(podToFrozen)
	rep.JobDoneToFrozen, rep.CreateToFrozen = summarise(jobToFrozen), summarise(createToFrozen)
	if !last.IsZero() {
		rep.WallSeconds = last.Sub(first).Seconds()
		rep.Throughput = float64(len(createToFrozen)) / rep.WallSeconds
	}

	w := Writes{
		JobCreates: operator.Sum(isJobCreate), StatusWrites: operator.Sum(isStatusWrite),
		Events: operator.Sum(isEvent), Other: operator.Sum(isOtherWrite),
		Failed:                operator.Sum(func(r Request) bool { return !r.OK && r.IsWrite() }),
		StatusWritesHistogram: map[string]int{}, ByPhase: operator.ByPhase,
	}
	if n := float64(rep.Succeeded); n > 0 {
		w.JobCreatesPerCall, w.StatusWritesPerCall = float64(w.JobCreates)/n, float64(w.StatusWrites)/n
		w.EventsPerCall, w.OtherPerCall = float64(w.Events)/n, float64(w.Other)/n
	}
	for _, name := range names {
		if c := calls[name]; c.created.IsZero() {
			continue
		}
		n := operator.PerCall[name]
		w.StatusWritesHistogram[strconv.Itoa(n)]++
		if n > 2 && len(w.OverBudget) < 10 {
			w.OverBudget = append(w.OverBudget, fmt.Sprintf("%s (%d)", name, n))
		}
	}
	rep.Writes = w
}

// failureOf explains a call that did not end Succeeded, including where a timed-out call stopped.
func failureOf(name string, c callTimes) (Failure, bool) {
	f := Failure{Call: name, Phase: string(c.phase), Reason: c.reason, Message: c.message}
	switch {
	case c.createErr != nil:
		f.Phase, f.Reason, f.Message = "NotCreated", "CreateFailed", c.createErr.Error()
	case c.frozen.IsZero():
		f.Phase, f.Reason = "TimedOut", "NoTerminalPhase"
		switch {
		case c.jobAdded.IsZero():
			f.Message = "no Job was seen"
		case c.podDone.IsZero():
			f.Message = "a Job was seen, its Pod never terminated"
		default:
			f.Message = "the Pod terminated, the result was never frozen"
		}
	case c.phase != v1alpha1.PhaseSucceeded:
	case len(c.jobs) > 1:
		f.Reason, f.Message = "ExtraJobs", fmt.Sprintf("Succeeded, but %d Jobs were seen", len(c.jobs))
	default:
		return f, false
	}
	return f, true
}

// Print renders the report as a table.
func (rep *Report) Print(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { _, _ = fmt.Fprintf(tw, format+"\n", args...) }
	p("machine\t%s", rep.Machine)
	p("load average\t%s before the calls, %s after", rep.LoadBefore, rep.LoadAfter)
	pace := "as fast as possible"
	if rep.Rate > 0 {
		pace = fmt.Sprintf("at %.1f/s", rep.Rate)
	}
	p("calls\t%d, created by %d goroutines %s in %.2fs", rep.Calls, rep.Concurrency, pace, rep.CreateSeconds)
	p("workers\toperator %d ToolCall workers, simulated Kubelet %d", rep.OperatorWorkers, rep.KubeletWorkers)
	p("succeeded\t%d", rep.Succeeded)
	p("wall time\t%.2fs (first create → last result frozen)", rep.WallSeconds)
	p("throughput\t%.1f calls/s", rep.Throughput)
	if len(rep.CPUSeconds) > 0 {
		names := slices.Sorted(maps.Keys(rep.CPUSeconds))
		parts := make([]string, 0, len(names))
		for _, n := range names {
			parts = append(parts, fmt.Sprintf("%s %.1f", n, rep.CPUSeconds[n]))
		}
		p("CPU during the calls (s)\t%s", strings.Join(parts, ", "))
	}
	p("")
	p("latency (ms)\tn\tp50\tp99\tmax")
	for _, l := range []struct {
		name string
		l    Latency
	}{{"ToolCall create → Job created", rep.CreateToJob}, {"Pod terminated → result frozen", rep.PodDoneToFrozen},
		{"Job Complete → result frozen", rep.JobDoneToFrozen}, {"ToolCall create → result frozen", rep.CreateToFrozen}} {
		p("%s\t%d\t%.1f\t%.1f\t%.1f", l.name, l.l.N, l.l.P50, l.l.P99, l.l.Max)
	}
	p("")
	w := rep.Writes
	p("operator writes\ttotal\tper successful call")
	p("Job creates\t%d\t%.2f", w.JobCreates, w.JobCreatesPerCall)
	p("ToolCall status writes\t%d\t%.2f", w.StatusWrites, w.StatusWritesPerCall)
	p("events\t%d\t%.2f", w.Events, w.EventsPerCall)
	p("other writes\t%d\t%.2f", w.Other, w.OtherPerCall)
	p("failed writes (non-2xx)\t%d\t", w.Failed)
	p("status writes per call\t%v", w.StatusWritesHistogram)
	p("status writes by phase written\t%v", w.ByPhase)
	if len(w.OverBudget) > 0 {
		p("over budget (>2)\t%v", w.OverBudget)
	}
	p("")
	p("operator requests\tcount\tmean ms")
	for _, k := range rep.OperatorRequests {
		p("  %s\t%d\t%.1f", k.Kind, k.Count, k.MeanMs)
	}
	p("simulated cluster requests\t")
	for _, k := range rep.ClusterRequests {
		p("  %s\t%d\t%.1f", k.Kind, k.Count, k.MeanMs)
	}
	p("reconciles (controller result)\t")
	for _, k := range rep.Reconciles {
		p("  %s\t%d", k.Kind, k.Count)
	}
	p("request counts cross-check\t%d counted by transports, %d by client-go metrics", rep.CountedRequests, rep.ClientGoRequests)
	p("")
	who := "process (operator, simulated Kubelet, harness)"
	if rep.OperatorMemory != nil {
		printMemory(p, "operator process", *rep.OperatorMemory)
		who = "bench process (simulated Kubelet, harness)"
	}
	printMemory(p, who, rep.Memory)
	st := rep.Storage
	p("retention\tkeep=%v (operator TTL off: every finished call stays)", rep.Keep)
	p("ToolCall object (GET JSON)\tn=%d min %d B, mean %d B, max %d B (result %d B)", st.ObjectBytes.N, st.ObjectBytes.Min, st.ObjectBytes.Mean, st.ObjectBytes.Max, st.ResultBytesPerCal)
	if pf := rep.Prefill; pf != nil {
		p("prefill\t%d finished copies of %s written in %.1fs", pf.Calls, pf.Template, pf.Seconds)
		printMemory(p, "new operator process with them all", pf.Restarted)
		p("  etcd db size\t%.1f → %.1f MiB (in use %.1f → %.1f MiB): %.0f B per call in use",
			mib(pf.EtcdDBBefore), mib(pf.EtcdDBAfter), mib(pf.EtcdInUseBefore), mib(pf.EtcdInUseAfter),
			float64(pf.EtcdInUseAfter-pf.EtcdInUseBefore)/float64(max(1, pf.Calls)))
	}
	p("etcd db size\t%.1f MiB → %.1f MiB (in use %.1f → %.1f MiB), %d keys after",
		mib(st.EtcdDBBefore), mib(st.EtcdDBAfter), mib(st.EtcdInUseBefore), mib(st.EtcdInUseAfter), st.EtcdKeysAfter)
	_ = tw.Flush()
	if len(rep.Failures) > 0 {
		_, _ = fmt.Fprintf(out, "\n%d calls did not succeed:\n", len(rep.Failures))
		for i, f := range rep.Failures {
			if i == 20 {
				_, _ = fmt.Fprintf(out, "  … and %d more (see -json)\n", len(rep.Failures)-20)
				break
			}
			_, _ = fmt.Fprintf(out, "  %s: %s %s: %s\n", f.Call, f.Phase, f.Reason, f.Message)
			if f.Timeline != "" || f.Cluster != "" {
				_, _ = fmt.Fprintf(out, "    seen: %s\n    after the run: %s\n", f.Timeline, f.Cluster)
			}
		}
	}
	for _, e := range rep.WatchErrors {
		_, _ = fmt.Fprintf(out, "watch error: %s\n", e)
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func printMemory(p func(string, ...any), who string, m Memory) {
	p("%s RSS\t%.1f MiB (peak %.1f MiB)", who, mib(m.RSSBytes), mib(m.PeakRSSBytes))
	p("  Go heap\t%.1f MiB allocated, %.1f MiB live after GC, %.1f MiB heap sys, %.1f MiB Go sys",
		mib(int64(m.HeapAllocBytes)), mib(int64(m.HeapLiveBytes)), mib(int64(m.HeapSysBytes)), mib(int64(m.GoSysBytes)))
	p("  goroutines\t%d", m.Goroutines)
}
