package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/pkg/frame"
)

// The session mode of the signer ($TOOLGATE_SESSION=1 with --sign): a session Pod runs one
// session's calls one after another. The signer holds no secret but the handover public
// keys; it listens for the operator over mutual TLS (session_tls.go), reads one Handover
// line per call, verifies it for this Pod, has the body side run the call as a one-shot
// call runs, writes the signed frame back as one frame.ResultLine and forgets the call's key.
// Anything that breaks the session's integrity ends it (endSession): the runner exits
// ExitRunnerError so that the operator replaces the Pod.

// endMargin is how long after a call's deadline and kill grace the signer still waits for
// the body side's end before it gives up on the session.
const endMargin = 3 * time.Second

var (
	errBodyBetweenCalls = errors.New("the tool's side of the runner spoke or went away between calls")
	errReplay           = errors.New("a handover for a call attempt this session already ran")
	errResetFailed      = errors.New("the tool's container could not be reset after the call")
)

type session struct {
	cfg      config
	link     <-chan linkMsg
	lw       *linkWriter
	sigs     <-chan os.Signal
	stderr   io.Writer
	seen     map[string]bool // call uid/attempt run in this session
	stopping bool
}

// runSession is the signer's session mode; it returns the runner's exit code.
func runSession(cfg config, ln net.Listener, sigs <-chan os.Signal, stderr io.Writer) int {
	opLn, conf, err := listenOperator(cfg)
	if err != nil {
		return endSession(cfg, frame.ReasonInvalidConfiguration, fmt.Errorf("the session listener: %w", err), stderr)
	}
	defer opLn.Close()
	if err := protectKey(); err != nil {
		return endSession(cfg, frame.ReasonInvalidConfiguration, fmt.Errorf("protecting the frame keys: %w", err), stderr)
	}
	conns := acceptOperators(opLn, conf, stderr)
	logf(stderr, "session: listening for the operator at %s", opLn.Addr())
	body, ok := acceptBody(ln, sigs)
	if !ok {
		logf(stderr, "session: stopped before the tool's side came")
		return 0
	}
	defer body.Close()
	s := &session{cfg: cfg, link: linkMessages(body), lw: &linkWriter{w: body}, sigs: sigs, stderr: stderr, seen: map[string]bool{}}
	return s.serve(conns)
}

// operatorConn is one authenticated connection and the Handovers read from it.
type operatorConn struct {
	c    net.Conn
	hs   chan handoverResult
	done chan struct{}
}

type handoverResult struct {
	h   frame.Handover
	err error
}

func newOperatorConn(c net.Conn) *operatorConn {
	oc := &operatorConn{c: c, hs: make(chan handoverResult), done: make(chan struct{})}
	go func() {
		hr := frame.NewHandoverReader(c)
		for {
			h, err := hr.Next()
			select {
			case oc.hs <- handoverResult{h, err}:
			case <-oc.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return oc
}

func (oc *operatorConn) close() {
	close(oc.done)
	_ = oc.c.Close()
}

// serve waits, between calls, for whichever comes first: a Handover on the current
// connection (run it), a newer authenticated connection (it replaces the current one: only
// the operator can make one, and it redials when it finds its connection broken, which
// this side may not notice yet), SIGTERM (exit 0), or anything from the body side (which
// has nothing to say between calls: the session ends).
func (s *session) serve(conns <-chan net.Conn) int {
	var cur *operatorConn
	defer func() {
		if cur != nil {
			cur.close()
		}
	}()
	for {
		var hs <-chan handoverResult
		if cur != nil {
			hs = cur.hs
		}
		select {
		case <-s.sigs:
			logf(s.stderr, "session: stopped while idle")
			return 0
		case <-s.link:
			return s.end(frame.ReasonBodyLost, errBodyBetweenCalls)
		case c := <-conns:
			if cur != nil {
				cur.close()
				logf(s.stderr, "session: a new connection from the operator replaces the previous one")
			}
			cur = newOperatorConn(c)
		case r := <-hs:
			switch {
			case errors.Is(r.err, frame.ErrMalformedHandover):
				_ = s.reply(cur, nil, failed(frame.Frame{}, frame.ReasonInvalidConfiguration, frame.ExitRunnerError, r.err))
				return s.end(frame.ReasonInvalidConfiguration, r.err)
			case r.err != nil: // closed or broken while idle: the operator redials
				logf(s.stderr, "session: the operator's connection ended: %v", r.err)
				cur.close()
				cur = nil
				continue
			}
			if code, more := s.call(cur, r.h); !more {
				return code
			}
		}
	}
}

// call runs one Handover's call and replies on oc; more is false when the session ends
// (code is then the runner's exit code).
func (s *session) call(oc *operatorConn, h frame.Handover) (code int, more bool) {
	if !frame.VerifyHandover(s.cfg.handoverKeys, s.cfg.podUID, h) {
		// Not the operator's for this Pod: nothing to sign for, nothing run.
		_ = s.reply(oc, nil, failed(frame.Frame{}, frame.ReasonHandoverRefused, frame.ExitRunnerError, errHandoverRefused))
		return s.end(frame.ReasonHandoverRefused, errHandoverRefused), false
	}
	key := h.AttemptKey
	defer clear(key) // the attempt's key is the call's only
	f := frame.Frame{ArgsDigest: h.ArgumentsDigest}
	id := h.CallUID + "/" + strconv.Itoa(h.Attempt)
	if s.seen[id] {
		_ = s.reply(oc, nil, failed(frame.Frame{}, frame.ReasonHandoverRefused, frame.ExitRunnerError, errReplay))
		return s.end(frame.ReasonHandoverRefused, errReplay), false
	}
	s.seen[id] = true
	if err := frame.CheckSession(h); err != nil {
		_ = s.reply(oc, key, failed(f, frame.ReasonInvalidConfiguration, frame.ExitRunnerError, err))
		return s.end(frame.ReasonInvalidConfiguration, err), false
	}
	cfg := s.cfg
	cfg.args, cfg.argsDigest, cfg.traceparent, cfg.frameKey = h.Arguments, h.ArgumentsDigest, h.Traceparent, key
	cfg.callEnv, cfg.deadline = h.Env, time.Duration(h.DeadlineMs)*time.Millisecond
	cfg.credentials = append(slices.Clone(s.cfg.credentials), callCredentials(h)...)
	if refused, ok := preflight(cfg, f, s.stderr); !ok {
		_ = s.reply(oc, key, refused)
		return s.end(refused.Reason, errors.New(refused.Error)), false
	}
	f, reason, err := s.run(cfg, f)
	f = redactError(f, cfg.credentials)
	if werr := s.reply(oc, key, f); werr != nil && reason == "" {
		reason, err = frame.ReasonResultUndelivered, werr
	}
	if reason != "" {
		return s.end(reason, err), false
	}
	if s.stopping {
		logf(s.stderr, "session: stopped after a call")
		return 0, false
	}
	return 0, true
}

// callCredentials are the values of the call's own variables that SecretEnv names.
func callCredentials(h frame.Handover) []credential {
	var creds []credential
	for _, name := range h.SecretEnv {
		for _, kv := range h.Env {
			if n, v, _ := strings.Cut(kv, "="); n == name {
				creds = append(creds, credential{name: name, value: []byte(v)})
			}
		}
	}
	return creds
}

// run has the body side run the call and keeps, redacts and counts what it streams back,
// as runRemote does for a one-shot call. reason is set (with err) when the session must
// end after this call's frame: the body side lost, the deadline overrun (the body side's
// word, or the signer's own clock), or the container not reset.
func (s *session) run(cfg config, f frame.Frame) (_ frame.Frame, reason string, err error) {
	start := linkStartMsg{Run: true, Args: cfg.args, ArgsFile: cfg.argsFile, Traceparent: cfg.traceparent,
		Env: cfg.callEnv, DeadlineMs: cfg.deadline.Milliseconds()}
	if err := s.lw.sendJSON(linkStart, start); err != nil {
		return failed(f, frame.ReasonBodyLost, frame.ExitRunnerError, errBodyLost), frame.ReasonBodyLost, errBodyLost
	}
	c := newCapture(cfg, s.stderr)
	begin := time.Now()
	bound := time.NewTimer(endBound(cfg.deadline))
	defer bound.Stop()
	for {
		select {
		case <-s.sigs:
			s.stopping = true // the body side stops the tool; the call still ends
		case <-bound.C:
			err := errDeadlineUnreported(cfg.deadline)
			return failed(f, frame.ReasonDeadlineExceeded, frame.ExitRunnerError, err), frame.ReasonDeadlineExceeded, err
		case m, ok := <-s.link:
			switch {
			case !ok:
				return failed(f, frame.ReasonBodyLost, frame.ExitRunnerError, errBodyLost), frame.ReasonBodyLost, errBodyLost
			case m.typ == linkStdout:
				_, _ = c.outW.Write(m.p)
			case m.typ == linkStderr:
				_, _ = c.errsW.Write(m.p)
			default:
				var end linkEndMsg
				if json.Unmarshal(m.p, &end) != nil {
					return failed(f, frame.ReasonBodyLost, frame.ExitRunnerError, errBodyLost), frame.ReasonBodyLost, errBodyLost
				}
				c.close()
				return s.ended(cfg, f, c, end, time.Since(begin))
			}
		}
	}
}

// ended is the frame of a call whose end the body side reported.
func (s *session) ended(cfg config, f frame.Frame, c *capture, end linkEndMsg, took time.Duration) (frame.Frame, string, error) {
	if code, ok := bodyReasons[end.Reason]; ok {
		f = failed(f, end.Reason, code, errors.New(end.Error))
	} else {
		f.ExitCode, f.Signal, f.DurationMs, f.OutputLeftOpen = end.ExitCode, boundedSignal(end.Signal), end.DurationMs, end.OutputLeftOpen
		f = c.fill(f)
	}
	if pastDeadline(cfg.deadline, took, &end) {
		err := errDeadline(cfg.deadline)
		f.Reason, f.Error = frame.ReasonDeadlineExceeded, err.Error()
		return f, frame.ReasonDeadlineExceeded, err
	}
	if end.CleanupError != "" {
		logf(s.stderr, "session: %s", redactError(frame.Frame{Error: end.CleanupError}, cfg.credentials).Error)
		return f, frame.ReasonSessionResetFailed, errResetFailed
	}
	return f, "", nil
}

// reply writes f to the operator, signed with key (nil: unsigned, a refusal that vouches
// for nothing): the log block, when the frame is too large for a termination message,
// then the termination message as one frame.ResultLine.
func (s *session) reply(oc *operatorConn, key []byte, f frame.Frame) error {
	if f.Reason != "" {
		logf(s.stderr, "%s: %s", f.Reason, f.Error)
	}
	term, block, err := frame.Encoder{Key: key, Marker: s.cfg.marker}.Encode(f)
	if err != nil {
		return err
	}
	_ = oc.c.SetWriteDeadline(time.Now().Add(replyBound))
	_, err = oc.c.Write(append(block, frame.ResultLine(term)...))
	return err
}

func (s *session) end(reason string, err error) int {
	return endSession(s.cfg, reason, err, s.stderr)
}

// endSession ends a session Pod's signer: its reason in the log and in its termination
// message (an unsigned frame: it vouches for no call), and exit ExitRunnerError.
func endSession(cfg config, reason string, err error, stderr io.Writer) int {
	logf(stderr, "session ended: %s: %v", reason, err)
	f := failed(frame.Frame{}, reason, frame.ExitRunnerError, fmt.Errorf("session ended: %w", err))
	if term, _, encErr := (frame.Encoder{Marker: cfg.marker}).Encode(f); encErr == nil {
		if werr := writeTermination(cfg.terminationPath, term); werr != nil {
			logf(stderr, "writing termination message: %v", werr)
		}
	}
	return frame.ExitRunnerError
}
