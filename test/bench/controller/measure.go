package main

import (
	"bufio"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Latency summarises one latency over the calls that have both ends, in milliseconds.
type Latency struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50Ms"`
	P99 float64 `json:"p99Ms"`
	Max float64 `json:"maxMs"`
}

// summarise computes nearest-rank percentiles.
func summarise(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(ds))+0.999999) - 1
		return ds[max(0, min(i, len(ds)-1))]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return Latency{N: len(ds), P50: ms(rank(0.50)), P99: ms(rank(0.99)), Max: ms(ds[len(ds)-1])}
}

// Memory is this process's memory: the operator, the simulated Kubelet and the harness
// (kube-apiserver and etcd are separate processes).
type Memory struct {
	RSSBytes       int64  `json:"rssBytes"`
	PeakRSSBytes   int64  `json:"peakRssBytes"`
	HeapAllocBytes uint64 `json:"heapAllocBytes"`
	HeapLiveBytes  uint64 `json:"heapLiveAfterGCBytes"`
	HeapSysBytes   uint64 `json:"heapSysBytes"`
	GoSysBytes     uint64 `json:"goSysBytes"`
	NumGC          uint32 `json:"numGC"`
	Goroutines     int    `json:"goroutines"`
}

// readMemory reads VmRSS and VmHWM from /proc/self/status and the Go heap, before and after
// a forced GC (the live heap is what the caches and queues really hold).
func readMemory() Memory {
	var m Memory
	if f, err := os.Open("/proc/self/status"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 {
				continue
			}
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			switch fields[0] {
			case "VmRSS:":
				m.RSSBytes = kb << 10
			case "VmHWM:":
				m.PeakRSSBytes = kb << 10
			}
		}
		_ = f.Close()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.HeapAllocBytes, m.HeapSysBytes, m.GoSysBytes = ms.HeapAlloc, ms.HeapSys, ms.Sys
	runtime.GC()
	runtime.ReadMemStats(&ms)
	m.HeapLiveBytes, m.NumGC = ms.HeapAlloc, ms.NumGC
	m.Goroutines = runtime.NumGoroutine()
	return m
}

// registryCounts reads, from controller-runtime's metrics registry, client-go's request
// counter summed over every client of the process (rest_client_requests_total) and the
// reconciles per controller and result (controller_runtime_reconcile_total).
func registryCounts() (restRequests int, reconciles map[string]int) {
	reconciles = map[string]int{}
	families, err := metrics.Registry.Gather()
	if err != nil {
		return -1, reconciles
	}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			v := int(m.GetCounter().GetValue())
			switch mf.GetName() {
			case "rest_client_requests_total":
				restRequests += v
			case "controller_runtime_reconcile_total":
				reconciles[labels["controller"]+" "+labels["result"]] += v
			}
		}
	}
	return restRequests, reconciles
}

// loadAverage is the 1-minute load average (the machine is shared: other work skews figures).
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// machine describes where the benchmark ran.
func machine() string {
	model := ""
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	memTotal := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				memTotal = strconv.FormatInt(kb>>20, 10) + " GiB RAM"
			}
		}
	}
	return strings.Join([]string{runtime.GOOS + "/" + runtime.GOARCH, strconv.Itoa(runtime.NumCPU()) + " CPUs",
		model, memTotal, runtime.Version()}, ", ")
}
