package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// killGrace is how long a call's tool has between the SIGTERM of its deadline and the
// SIGKILL of its process group.
const killGrace = 2 * time.Second

// pastDeadline is the signer's verdict on a call with deadline d whose body side reported
// end (nil: no end) took after the start: past it when the body side says it stopped the
// tool there, or when the signer's own clock saw more than d and the kill grace, whatever
// the body side says. No deadline (d ≤ 0): never.
func pastDeadline(d, took time.Duration, end *linkEndMsg) bool {
	if d <= 0 {
		return false
	}
	return end != nil && end.DeadlineExceeded || took > d+killGrace
}

// endBound is how long the signer waits for the body side's end of a call with deadline d.
func endBound(d time.Duration) time.Duration { return d + killGrace + endMargin }

func errDeadline(d time.Duration) error {
	return fmt.Errorf("the call ran past its deadline of %v and was stopped", d)
}

// errDeadlineUnreported: past the deadline, and the body side never said how the call ended.
func errDeadlineUnreported(d time.Duration) error {
	return fmt.Errorf("%w; its end was never reported", errDeadline(d))
}

// watchDeadline enforces a session call's deadline d on the process group of pid: at d,
// SIGTERM to the group, killGrace later SIGKILL, unless done closes first; abort
// closed (the signer went away mid-call) is SIGKILL at once. The function it returns
// reports whether the deadline came. No deadline (d ≤ 0): nothing.
func watchDeadline(d time.Duration, pid int, done, abort <-chan struct{}) func() bool {
	var overran atomic.Bool
	if d <= 0 {
		return overran.Load
	}
	go func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-done:
			return
		case <-abort:
			killGroup(pid, syscall.SIGKILL)
			return
		case <-t.C:
		}
		overran.Store(true)
		killGroup(pid, syscall.SIGTERM)
		t.Reset(killGrace)
		select {
		case <-done:
		case <-t.C:
			killGroup(pid, syscall.SIGKILL)
		}
	}()
	return overran.Load
}

// bodySession is the body side of a session Pod ($TOOLGATE_SESSION=1): PID 1 of the tool's
// container, linked to the signer for the Pod's life. For each start message it runs the
// call exactly as the one-shot body side does (runForSigner), with the container's own
// environment and the call's variables only, in a process group of its own and within the
// call's deadline; then it resets the container (resetAfterCall) and reports the end.
// It runs on one processor (GOMAXPROCS 1): under gVisor every hand-off between its threads
// costs host context switches; on the ptrace platform a call's run (start message to end,
// /tools/echo) took a median 16 ms against 47 ms with two
// (docs/reports/2026-12-06-session-gvisor.md; kept under systrap without its fast path, which
// the local cluster runs now: docs/reports/2026-12-06-gvisor-systrap.md).
// It returns 0 when the signer ends the session (the link closes; SIGTERM while idle waits
// for that, the signer being stopped too), ExitRunnerError when the signer refused a call, the link broke, or the container
// could not be reset.
func bodySession(cfg config, conn io.ReadWriter, sigs <-chan os.Signal, stderr io.Writer) int {
	runtime.GOMAXPROCS(1)
	starts := startMessages(conn)
	lw := &linkWriter{w: conn}
	for {
		var start linkStartMsg
		select {
		case <-sigs:
			// The kubelet stops both containers: the signer, stopped too, ends the link
			// (then exit 0). Leaving first would look, to the signer, like a lost body.
			logf(stderr, "session: stopping: waiting for the signer to end the session")
			continue
		case r, ok := <-starts:
			if !ok {
				return 0 // the signer ended the session
			}
			if r.err != nil {
				logf(stderr, "session: %v", r.err)
				return frame.ExitRunnerError
			}
			start = r.m
		}
		if !start.Run {
			return frame.ExitRunnerError
		}
		call := cfg
		call.args, call.argsFile, call.traceparent = start.Args, start.ArgsFile, start.Traceparent
		call.callEnv, call.deadline = start.Env, linkDeadline(start.DeadlineMs)
		abort, callDone, watched := watchLink(starts)
		call.abort = abort
		end := runForSigner(call, lw, sigs)
		close(callDone)
		linkBroke := <-watched
		if err := resetAfterCall(call); err != nil {
			end.CleanupError = err.Error()
			logf(stderr, "session: %v", err)
		}
		clearTermination(cfg.terminationPath)
		if linkBroke {
			logf(stderr, "session: the signer went away during a call")
			return frame.ExitRunnerError
		}
		if err := lw.sendJSON(linkEnd, end); err != nil || end.CleanupError != "" {
			return frame.ExitRunnerError
		}
	}
}

// watchLink watches the link during a call: the signer has nothing to send until the call
// ends, so a message or the link's end closes abort (the tool's group is killed at once).
// Close callDone when the call ended; watched then says whether the link broke.
func watchLink(starts <-chan startResult) (abort <-chan struct{}, callDone chan<- struct{}, watched <-chan bool) {
	ab, cd, w := make(chan struct{}), make(chan struct{}), make(chan bool, 1)
	go func() {
		select {
		case <-starts:
			close(ab)
			w <- true
		case <-cd:
			w <- false
		}
	}()
	return ab, cd, w
}

type startResult struct {
	m   linkStartMsg
	err error
}

// startMessages reads the signer's start messages, one per call; the channel is closed at
// the link's end (EOF), after an error it delivers.
func startMessages(r io.Reader) <-chan startResult {
	ch := make(chan startResult)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			typ, p, err := readLink(br, map[byte]int{linkStart: maxLinkStart})
			if errors.Is(err, io.EOF) {
				return
			}
			var m linkStartMsg
			if err == nil && typ == linkStart {
				err = json.Unmarshal(p, &m)
			}
			ch <- startResult{m, err}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// resetAfterCall leaves nothing of a session call in the container but the workspace: the
// tool's process group is already gone (runProcess); as PID 1 it kills every other process
// of the container (killOthers, as a one-shot body side does before it exits); then it
// removes the contents of each wipe directory ($TOOLGATE_SESSION_WIPE: /tmp, /dev/shm,
// $HOME), of the arguments file's directory and of the link volume (the tool can write
// there too; the egress CA bundle is written again for each call) but the signer's socket,
// keeping the directories themselves.
func resetAfterCall(cfg config) error {
	killOthers()
	dirs := append([]string(nil), cfg.wipeDirs...)
	if cfg.argsFile != podcontract.NoArgsFile {
		dirs = append(dirs, filepath.Dir(cfg.argsFile))
	}
	var errs []error
	for _, d := range dirs {
		if !wipeable(d, cfg.workspace) {
			continue
		}
		if err := wipeContents(d); err != nil {
			errs = append(errs, fmt.Errorf("wiping %s: %w", d, err))
		}
	}
	if link := filepath.Dir(cfg.signerAddress); filepath.IsAbs(cfg.signerAddress) && wipeable(link, cfg.workspace) {
		if err := wipeContents(link, filepath.Base(cfg.signerAddress), filepath.Base(cfg.sessionRelay)); err != nil {
			errs = append(errs, fmt.Errorf("wiping %s: %w", link, err))
		}
	}
	return errors.Join(errs...)
}

// wipeable: an absolute directory other than "/", neither the workspace, nor in it, nor
// holding it (a $HOME of /workspace/home, or "/" by mistake, is left alone).
func wipeable(dir, workspace string) bool {
	dir = filepath.Clean(dir)
	if !filepath.IsAbs(dir) || dir == "/" {
		return false
	}
	ws := filepath.Clean(workspace)
	within := func(a, b string) bool { return a == b || strings.HasPrefix(a, b+"/") }
	return !within(dir, ws) && !within(ws, dir)
}

// wipeContents removes everything in dir but the entries named in keep (not following
// symbolic links), keeping dir and its mode; a directory that does not exist has nothing
// to wipe. A tree the tool made unwritable (chmod 0) is made writable first: its files are
// the container user's.
func wipeContents(dir string, keep ...string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if slices.Contains(keep, e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if os.RemoveAll(p) == nil {
			continue
		}
		_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, _ error) error {
			if d != nil && d.IsDir() {
				_ = os.Chmod(q, 0o700)
			}
			return nil
		})
		errs = append(errs, os.RemoveAll(p))
	}
	return errors.Join(errs...)
}
