package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/toolgate/toolgate/pkg/frame"
)

// signerDialBound is how long the body side tries to reach the signer. The kubelet starts
// a Pod's containers in order, the signer's first, so the signer is starting or listening
// when the body's container starts; the bound only ends a Pod whose signer never came.
const signerDialBound = 30 * time.Second

// bodySide is the runner as PID 1 of the body's container (--body). It holds no key and no
// credential but the body's own: it connects to the signer, takes the arguments it sends,
// runs the tool exactly as a runner alone does (arguments on stdin and in the file,
// SIGTERM and SIGINT forwarded, every other signal caught), streams the tool's stdout and
// stderr to the signer unkept, and reports how the tool ended; then, as PID 1, it kills
// what the tool left, empties the container's termination message and exits with the
// tool's code, so that the kubelet's account of the container agrees with the frame.
func bodySide(cfg config, sigs <-chan os.Signal, stderr io.Writer) int {
	conn, err := dialSigner([]string{cfg.signerAbstract, cfg.signerAddress}, sigs, signerDialBound)
	if err != nil {
		logf(stderr, "reaching the signer at %s or %s: %v", cfg.signerAbstract, cfg.signerAddress, err)
		return frame.ExitRunnerError
	}
	defer conn.Close()
	if cfg.session {
		if cfg.sessionRelay != "" {
			ln, err := relayOperator(cfg.sessionAddr, cfg.sessionRelay, stderr)
			if err != nil {
				logf(stderr, "session: the relay's listener: %v", err)
				return frame.ExitRunnerError
			}
			defer ln.Close()
			logf(stderr, "session: relaying the operator's connections from %s to %s", ln.Addr(), cfg.sessionRelay)
		}
		silence()
		if err := protectKey(); err != nil {
			logf(stderr, "%v", err)
		}
		return bodySession(cfg, conn, sigs, stderr)
	}
	start, err := readStart(conn)
	if err != nil || !start.Run {
		if err != nil {
			logf(stderr, "%v", err)
		}
		return frame.ExitRunnerError
	}
	silence()
	if err := protectKey(); err != nil { // nothing secret here; its memory is still its own
		logf(stderr, "%v", err)
	}
	cfg.args, cfg.argsFile, cfg.traceparent = start.Args, start.ArgsFile, start.Traceparent
	cfg.deadline = linkDeadline(start.DeadlineMs)
	lw := &linkWriter{w: conn}
	end := runForSigner(cfg, lw, sigs)
	killOthers()
	clearTermination(cfg.terminationPath)
	_ = lw.sendJSON(linkEnd, end)
	return end.ExitCode
}

// runForSigner writes the arguments file and runs the tool, its output streamed to the
// signer as it comes.
func runForSigner(cfg config, lw *linkWriter, sigs <-chan os.Signal) linkEndMsg {
	f := frame.Frame{}
	if err := writeArgsFile(cfg.argsFile, cfg.args); err != nil {
		f = failed(f, frame.ReasonArgumentsFileError, frame.ExitRunnerError, err)
	} else {
		f, _ = runProcess(cfg, f, sigs, lw.stream(linkStdout), lw.stream(linkStderr))
	}
	return linkEndMsg{ExitCode: f.ExitCode, Signal: f.Signal, Reason: f.Reason, Error: f.Error,
		DurationMs: f.DurationMs, OutputLeftOpen: f.OutputLeftOpen,
		DeadlineExceeded: f.Reason == frame.ReasonDeadlineExceeded}
}

// linkDeadline is the deadline a start message carries (0, none, when it is out of
// bounds: the signer sends only what it checked).
func linkDeadline(ms int64) time.Duration {
	if ms <= 0 || ms > frame.MaxSessionDeadlineMs {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// dialSigner connects to the signer at the first of addrs that answers, trying again
// until bound or SIGTERM.
func dialSigner(addrs []string, sigs <-chan os.Signal, bound time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(bound)
	for {
		var err error
		for _, addr := range addrs {
			var c net.Conn
			if c, err = net.DialTimeout("unix", addr, time.Second); err == nil {
				return c, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		select {
		case s := <-sigs:
			return nil, fmt.Errorf("stopped (%v) before the signer answered", s)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// readStart reads the signer's start message.
func readStart(r io.Reader) (linkStartMsg, error) {
	typ, p, err := readLink(bufio.NewReader(r), map[byte]int{linkStart: maxLinkStart})
	if err != nil || typ != linkStart {
		return linkStartMsg{}, errors.Join(errors.New("no start message from the signer"), err)
	}
	var m linkStartMsg
	if err := json.Unmarshal(p, &m); err != nil {
		return linkStartMsg{}, fmt.Errorf("start message: %w", err)
	}
	return m, nil
}
