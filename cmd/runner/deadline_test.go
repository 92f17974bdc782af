package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
				if pid > 0 && !processEnds(pid, 5*time.Second) {
					t.Errorf("the tool's background process %d outlived the deadline", pid)
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

// The signer does not take the body side's word for the time: a body side that reports a
// clean end after the deadline and kill grace, or never reports at all, gets a
// DeadlineExceeded frame.
func TestColdDeadlineIsTheSignersClock(t *testing.T) {
	for name, tc := range map[string]struct {
		report bool
	}{"a late clean end": {report: true}, "no end": {report: false}} {
		t.Run(name, func(t *testing.T) {
			in, cmd, stderr, conn, start := signerWithFakeBody(t, map[string]string{podcontract.EnvDeadlineMs: "100"})
			defer conn.Close()
			if start.DeadlineMs != 100 {
				t.Fatalf("start %+v: want the deadline for the body side", start)
			}
			if tc.report {
				// The body side's clean end, said after the deadline and the kill grace had passed.
				time.Sleep(100*time.Millisecond + sessionKillGrace + 200*time.Millisecond)
				_ = (&linkWriter{w: conn}).sendJSON(linkEnd, linkEndMsg{ExitCode: 0})
			}
			serr := stderr()
			_ = cmd.Wait()
			o := in.outcome(cmd, nil, serr)
			if o.frame.Reason != frame.ReasonDeadlineExceeded {
				t.Fatalf("frame %+v, want DeadlineExceeded by the signer's own clock", o.frame)
			}
		})
	}
}

// processEnds reports whether pid is gone or a zombie (killed, not reaped: the test's body
// side is not PID 1) within bound, looking every 10 ms.
func processEnds(pid int, bound time.Duration) bool {
	for end := time.Now().Add(bound); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		// The state follows the command name's closing parenthesis.
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return true
		}
	}
	return false
}
