package main

import (
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reapGrace bounds how long the runner waits for the processes it killed.
const reapGrace = 2 * time.Second

// protectKey makes the runner non-dumpable before the tool starts: a process of
// the same user (the tool) can then neither read /proc/1/environ or /proc/1/mem
// nor ptrace the runner, so the frame key in the runner's environment stays its
// own. The tool itself is dumpable again after its execve, as usual.
func protectKey() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// killOthers kills every other process of the container and reaps them, when
// (and only when) the runner is its PID 1: a process the tool left behind could
// otherwise overwrite the termination message after the runner wrote it. Any
// other PID means the runner is not alone in its PID namespace (a test, a
// shared process namespace), and kill(-1) would reach processes that are not
// the tool's: then it does nothing.
func killOthers() {
	if os.Getpid() != 1 {
		return
	}
	deadline := time.Now().Add(reapGrace)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-1, syscall.SIGKILL); err == syscall.ESRCH {
			return // no other process left
		}
		var ws syscall.WaitStatus
		for {
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.ECHILD {
				break
			}
			if pid <= 0 {
				time.Sleep(5 * time.Millisecond)
				break
			}
		}
	}
}

// silence points the body side's stdout and stderr at /dev/null when it is PID 1, once it
// has reached the signer: the body's container log then holds nothing the body could
// write there through its PID 1's descriptors, unredacted (a runtime such as gVisor lets a
// process open another's /proc/<pid>/fd); the redacted stderr is in the signer's log.
func silence() {
	if os.Getpid() != 1 {
		return
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer null.Close()
	_ = unix.Dup2(int(null.Fd()), 1)
	_ = unix.Dup2(int(null.Fd()), 2)
}

// clearTermination empties the body container's termination message when the body side is
// PID 1, after every other process is gone: the Pod's status then shows nothing the body
// wrote there. (A body that kills its PID 1 first leaves its bytes: the operator, which
// never reads that message, deletes such a Pod as soon as it recorded the attempt.)
func clearTermination(path string) {
	if os.Getpid() != 1 {
		return
	}
	_ = os.Truncate(path, 0)
}

// inGroup starts cmd in a process group of its own (a session call's tool), so that the
// runner can signal the tool and every process it started that stayed in it.
func inGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends sig to the process group led by pid (the tool's, inGroup); a group
// already gone is no error.
func killGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
}
