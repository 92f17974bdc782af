package main

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/toolgate/toolgate/pkg/frame"
)

// The signer (--sign) is the runner in a container of its own: it holds the attempt's
// frame key (and, for redaction, the credentials' values) and runs nothing. The body side
// (--body, body.go), PID 1 of the body's container, connects to it over a Unix socket in a
// volume the two share, takes the arguments, runs the tool and streams back what it wrote and how it
// ended; the signer redacts and bounds that exactly as a runner alone does, signs the frame
// and delivers it from its own container (termination message, log block), where no
// process of the body's can write, read or signal, whatever the runtime.

var (
	errBodyNeverCame = errors.New("the tool's container never reached the runner, so the tool did not run under it")
	errBodyLost      = errors.New("the tool's side of the runner went away without saying how the tool ended")
)

// bodyReasons are the failures the body side may report (the tool never started), with
// the exit code each has; any other reason it names is dropped: the rest are the signer's.
var bodyReasons = map[string]int{
	frame.ReasonCommandNotFound: frame.ExitNotFound, frame.ReasonStartError: frame.ExitStartError,
	frame.ReasonArgumentsFileError: frame.ExitRunnerError,
}

// listenSigner listens where the body side connects, before anything else the signer
// does, so that the body side finds it as soon as its container starts: the abstract
// socket (the Pod's network namespace, which the two containers share under runc) and,
// when the Pod has the link volume (a runtime whose containers do not share it), a socket
// file there, which only the two containers mount; a file left there (a signer restarted
// in place) is replaced. Either serves; the first connection on either is the body side's.
func listenSigner(abstract, path string) (net.Listener, error) {
	var lns []net.Listener
	var errs []error
	if ln, err := net.Listen("unix", abstract); err == nil {
		lns = append(lns, ln)
	} else {
		errs = append(errs, err)
	}
	if _, err := os.Stat(filepath.Dir(path)); err == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		} else if ln, err := net.Listen("unix", path); err == nil {
			lns = append(lns, ln)
		} else {
			errs = append(errs, err)
		}
	}
	if len(lns) == 0 {
		return nil, errors.Join(errs...)
	}
	return newEitherListener(lns), nil
}

// eitherListener is one listener over several: Accept returns the first connection any of
// them accepts; Close closes them all.
type eitherListener struct {
	lns      []net.Listener
	accepted chan acceptedConn // buffered for every listener: no Accept goroutine blocks
	once     sync.Once
}

type acceptedConn struct {
	c   net.Conn
	err error
}

func newEitherListener(lns []net.Listener) *eitherListener {
	e := &eitherListener{lns: lns, accepted: make(chan acceptedConn, len(lns))}
	for _, ln := range lns {
		go func() {
			c, err := ln.Accept()
			e.accepted <- acceptedConn{c, err}
		}()
	}
	return e
}

// Accept returns the first connection (or the first error) of any listener; it is called
// once (acceptBody).
func (e *eitherListener) Accept() (net.Conn, error) {
	a := <-e.accepted
	return a.c, a.err
}

// Close closes every listener and any connection accepted after the first (once).
func (e *eitherListener) Close() error {
	var errs []error
	e.once.Do(func() {
		for _, ln := range e.lns {
			errs = append(errs, ln.Close())
		}
		go func() {
			for range len(e.lns) - 1 {
				if a := <-e.accepted; a.err == nil {
					_ = a.c.Close()
				}
			}
		}()
	})
	return errors.Join(errs...)
}

// Addr is the first listener's address.
func (e *eitherListener) Addr() net.Addr { return e.lns[0].Addr() }

// acceptBody waits for the body side's one connection, and closes the listener: nothing
// else ever gets to speak to the signer. ok is false when SIGTERM came first (the Pod is
// being stopped: its deadline, a deletion) or accepting failed.
func acceptBody(ln net.Listener, sigs <-chan os.Signal) (net.Conn, bool) {
	type accepted struct {
		c   net.Conn
		err error
	}
	got := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		got <- accepted{c, err}
	}()
	select {
	case a := <-got:
		_ = ln.Close()
		return a.c, a.err == nil
	case <-sigs:
		_ = ln.Close()
		if a := <-got; a.err == nil {
			_ = a.c.Close()
		}
		return nil, false
	}
}

// refuseBody tells the body side to run nothing (the signer refused the call and says why
// in its frame), so that its container ends too.
func refuseBody(ln net.Listener, sigs <-chan os.Signal, stderr io.Writer) {
	conn, ok := acceptBody(ln, sigs)
	if !ok {
		return
	}
	defer conn.Close()
	if err := (&linkWriter{w: conn}).sendJSON(linkStart, linkStartMsg{Run: false}); err != nil {
		logf(stderr, "telling the tool's side not to run: %v", err)
	}
}

// runRemote is runTool for the signer: the body side runs the tool with the arguments the
// signer checked, and the signer keeps, redacts and counts the output it streams back.
// SIGTERM does not stop the signer: the body side forwards it to the tool and reports the
// end (the kubelet's SIGKILL after the grace period ends both, with no frame).
func runRemote(cfg config, f frame.Frame, ln net.Listener, sigs <-chan os.Signal, stderr io.Writer) frame.Frame {
	conn, ok := acceptBody(ln, sigs)
	if !ok {
		return failed(f, frame.ReasonBodyLost, frame.ExitRunnerError, errBodyNeverCame)
	}
	defer conn.Close()
	go drainSignals(sigs)
	start := linkStartMsg{Run: true, Args: cfg.args, ArgsFile: cfg.argsFile, Traceparent: cfg.traceparent,
		DeadlineMs: cfg.deadline.Milliseconds()}
	if err := (&linkWriter{w: conn}).sendJSON(linkStart, start); err != nil {
		return failed(f, frame.ReasonBodyLost, frame.ExitRunnerError, errBodyLost)
	}
	begin := time.Now()
	if cfg.deadline > 0 {
		_ = conn.SetReadDeadline(begin.Add(endBound(cfg.deadline)))
	}
	c := newCapture(cfg, stderr)
	end, ok := receive(conn, c.outW, c.errsW)
	c.close()
	took := time.Since(begin)
	switch {
	case !ok && pastDeadline(cfg.deadline, took, nil):
		err := errDeadlineUnreported(cfg.deadline)
		return failed(f, frame.ReasonDeadlineExceeded, frame.ExitRunnerError, err)
	case !ok:
		return failed(f, frame.ReasonBodyLost, frame.ExitRunnerError, errBodyLost)
	}
	if code, ok := bodyReasons[end.Reason]; ok {
		return failed(f, end.Reason, code, errors.New(end.Error))
	}
	f.ExitCode, f.Signal, f.DurationMs, f.OutputLeftOpen = end.ExitCode, boundedSignal(end.Signal), end.DurationMs, end.OutputLeftOpen
	f = c.fill(f)
	if pastDeadline(cfg.deadline, took, &end) {
		// The body side stopped the tool at its deadline, or the signer's own clock says it
		// ran past it, whatever the body side reports.
		f.Reason, f.Error = frame.ReasonDeadlineExceeded, errDeadline(cfg.deadline).Error()
	}
	return f
}

// boundedSignal keeps a signal name the body side reports to what a runner alone writes.
func boundedSignal(s string) string {
	if len(s) > 16 {
		return "SIG?"
	}
	for _, c := range s {
		if c < '0' || c > 'Z' || c > '9' && c < 'A' {
			return "SIG?"
		}
	}
	return s
}

// drainSignals drops the signals the signer gets once the body side runs.
func drainSignals(sigs <-chan os.Signal) {
	for range sigs {
	}
}
