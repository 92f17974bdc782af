package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// A cold call's deadline is the tool's timeout counted from the body's start
// (TOOLGATE_DEADLINE_MS, the signer's; the Pod's activeDeadlineSeconds adds the start
// allowance): the body side stops the tool's whole process group at it, a SIGTERM the tool
// ignores is followed by SIGKILL, and the signer's frame says DeadlineExceeded.
func TestColdDeadlineStopsTheToolsGroupFromItsStart(t *testing.T) {
	for name, script := range map[string]string{
		"sleeps":           `sleep 60 & echo $! > "$PIDS"; echo started; sleep 60`,
		"ignores SIGTERM":  `trap '' TERM; sleep 60 & echo $! > "$PIDS"; echo started; while :; do sleep 1; done`,
		"detached process": `setsid sleep 60 & echo started; sleep 60`,
	} {
		t.Run(name, func(t *testing.T) {
			p := newPair(t, script)
			pids := filepath.Join(p.body.dir, "pids")
			p.body.env["PIDS"] = pids
			p.signer.env[podcontract.EnvDeadlineMs] = "300"
			o, bodyCode := p.run(nil)
			if o.frame.Reason != frame.ReasonDeadlineExceeded || !strings.Contains(o.frame.Error, "deadline of 300ms") {
				t.Fatalf("frame %+v, want DeadlineExceeded", o.frame)
			}
			if o.frame.Stdout != "started\n" || o.frame.ExitCode != bodyCode {
				t.Errorf("frame stdout %q exit %d, body side exit %d: the output so far and the body side's code", o.frame.Stdout, o.frame.ExitCode, bodyCode)
			}
			if b, err := os.ReadFile(pids); err == nil {
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				if pid > 0 {
					NewWithT(t).Eventually(func() bool { return processEnded(pid) }).WithTimeout(5*time.Second).
						WithPolling(10*time.Millisecond).Should(BeTrue(), "the tool's background process %d outlived the deadline", pid)
				}
			}
		})
	}
}

// Without a deadline (none set, or a tool that ends in time) nothing changes.
func TestColdDeadlineLetsATimelyToolEnd(t *testing.T) {
	p := newPair(t, `cat`)
	p.signer.env[podcontract.EnvDeadlineMs] = "30000"
	if o, code := p.run(nil); o.code != 0 || code != 0 || o.frame.Reason != "" || o.frame.Stdout != testArgs {
		t.Fatalf("exit %d/%d frame %+v", o.code, code, o.frame)
	}
}

// The signer does not take the body side's word for the time: a clean end reported after
// the deadline and the kill grace is DeadlineExceeded, as is the body side's own word; a
// call without a deadline never is.
func TestPastDeadlineIsTheSignersClock(t *testing.T) {
	const d = time.Second
	for _, tc := range []struct {
		name string
		d    time.Duration
		took time.Duration
		end  *linkEndMsg
		want bool
	}{
		{"a clean end in time", d, d, &linkEndMsg{}, false},
		{"a clean end within the kill grace", d, d + killGrace, &linkEndMsg{}, false},
		{"a clean end after the kill grace", d, d + killGrace + time.Millisecond, &linkEndMsg{}, true},
		{"the body side stopped it", d, d / 2, &linkEndMsg{DeadlineExceeded: true}, true},
		{"no end, after the kill grace", d, d + killGrace + time.Millisecond, nil, true},
		{"no end, before it", d, d, nil, false},
		{"no deadline", 0, time.Hour, &linkEndMsg{DeadlineExceeded: true}, false},
	} {
		if got := pastDeadline(tc.d, tc.took, tc.end); got != tc.want {
			t.Errorf("%s: pastDeadline = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A signer whose body side never reports an end gives up at its bound and signs a
// DeadlineExceeded frame.
func TestColdDeadlineBodySideSilent(t *testing.T) {
	in, cmd, stderr, conn, start := signerWithFakeBody(t, map[string]string{podcontract.EnvDeadlineMs: "100"})
	defer conn.Close()
	if start.DeadlineMs != 100 {
		t.Fatalf("start %+v: want the deadline for the body side", start)
	}
	serr := stderr()
	_ = cmd.Wait()
	o := in.outcome(cmd, nil, serr)
	if o.frame.Reason != frame.ReasonDeadlineExceeded || !strings.Contains(o.frame.Error, "never reported") {
		t.Fatalf("frame %+v, want DeadlineExceeded by the signer's own clock", o.frame)
	}
}

// processEnded reports whether pid is gone or a zombie (killed, not reaped: the test's body
// side is not PID 1).
func processEnded(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name's closing parenthesis.
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}
