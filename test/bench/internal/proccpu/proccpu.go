// Package proccpu reads the CPU time of this process and its child processes (envtest's
// kube-apiserver and etcd, an operator process) from /proc, so that a benchmark can say
// where a run's CPU went.
package proccpu

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, 100 on every Linux platform Go supports here.
const clockTicks = 100

// Sample is the CPU time (user + system) so far of this process ("self") and of each child
// process by command name (summed when several share a name).
type Sample map[string]time.Duration

// Read samples this process and its children; nil off Linux.
func Read() Sample {
	self := os.Getpid()
	out := Sample{}
	if t, _, ok := stat(strconv.Itoa(self)); ok {
		out["self"] = t
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid := filepath.Base(d)
		t, ppid, ok := stat(pid)
		if !ok || ppid != self {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		out[strings.TrimSpace(string(comm))] += t
	}
	return out
}

// Sub is s minus an earlier sample.
func (s Sample) Sub(before Sample) Sample {
	out := Sample{}
	for k, v := range s {
		out[k] = v - before[k]
	}
	return out
}

// stat returns a process's utime+stime and parent pid from /proc/<pid>/stat.
func stat(pid string) (time.Duration, int, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	// after the name: state(0) ppid(1) ... utime(11) stime(12)
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, _ := strconv.Atoi(f[1])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks, ppid, true
}
