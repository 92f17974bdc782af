package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// sessionTool is a session Pod's tool: one command for every call, which does what its
// arguments say.
var sessionTool = `a=$(cat)
case "$a" in
*daemon*) sleep 1000 >/dev/null 2>&1 & echo $! > "$WS/pid"; echo started;;
*check*) st=$(cut -d' ' -f3 "/proc/$(cat "$WS/pid")/stat" 2>/dev/null)
  if [ -z "$st" ] || [ "$st" = Z ]; then echo dead; else echo alive; fi;;
*write*) for d in "$T" "$HOME" "$WS" "$(dirname "$` + podcontract.EnvArgsFile + `")"; do echo x > "$d/f"; done
  mkdir "$HOME/locked" && touch "$HOME/locked/g" && chmod 0 "$HOME/locked"; echo wrote;;
*list*) for d in "$T" "$HOME" "$WS" "$(dirname "$` + podcontract.EnvArgsFile + `")"; do printf '[%s]' "$(ls -A "$d" | tr '\n' ' ')"; done;;
*env*) printf '%s|%s|%s' "$CALLVAR" "$TOKEN" "$TRACEPARENT";;
*mark*) touch "$WS/ran";;
*escape*) (exec 3>"$ALIVE"; : > "$WS/ready"; exec setsid sleep 1000) </dev/null >/dev/null 2>&1 &
  while [ ! -e "$WS/ready" ]; do sleep 0.01; done; echo started;;
*sleep*) sleep 30; echo late;;
*) printf '%s' "$a";;
esac`

// resign is h signed again for testPodUID after a change.
func resign(h frame.Handover) frame.Handover {
	return frame.SignHandover([][]byte{testKey}, testPodUID, h)
}

// Two calls in one session (on two connections: the operator closed the first while idle)
// each get their own arguments, variables and trace context, nothing of the other's, and
// each frame verifies with its own attempt's key and no other.
func TestSessionCallsAreTheirOwn(t *testing.T) {
	p := newSessionPod(t)
	p.start()
	op := p.operator()
	h1 := sessionCall("call-one", `{"op":"env"}`, "CALLVAR=one")
	h1.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	term1, err := op.call(resign(h1))
	if err != nil {
		t.Fatal(err)
	}
	if f := decodeFor(t, "call-one", term1); f.Stdout != "one||"+h1.Traceparent || f.ExitCode != 0 {
		t.Fatalf("call one: %+v", f)
	}
	_ = op.c.Close() // an idle close is no error: the operator redials
	op = p.operator()
	term2, err := op.call(sessionCall("call-two", `{"op":"x","n":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if f := decodeFor(t, "call-two", term2); f.Stdout != `{"op":"x","n":2}` || f.ArgsDigest != frame.DigestOf([]byte(`{"op":"x","n":2}`)) {
		t.Fatalf("call two: %+v", f)
	}
	term3, err := op.call(sessionCall("call-three", `{"op":"env"}`))
	if err != nil {
		t.Fatal(err)
	}
	if f := decodeFor(t, "call-three", term3); f.Stdout != "||" {
		t.Fatalf("call one's variables reached call three: %q", f.Stdout)
	}
	if _, _, err := (frame.Decoder{Key: frame.AttemptKey(testKey, "call-one", 1)}).DecodeTermination(term2); !errors.Is(err, frame.ErrSignature) {
		t.Fatalf("call one's key verifies call two's frame: %v", err)
	}
	p.stop()
}

// A Handover the runner must not take — not the operator's for this Pod, or arguments
// that are not the ones it names, or a call attempt the session already ran — runs
// nothing; its reply says why, and the session ends (exit 125) so that the Pod is replaced.
func TestSessionRefusalEndsTheSession(t *testing.T) {
	mark := sessionCall("call-mark", `{"op":"mark"}`)
	altered := mark
	altered.Arguments = []byte(`{"op":"mark","path":"/etc/shadow"}`)
	for name, tc := range map[string]struct {
		h      frame.Handover
		reason string
		signed bool
		replay bool
	}{
		"another Pod":     {h: frame.SignHandover([][]byte{testKey}, "another-pod", mark), reason: frame.ReasonHandoverRefused},
		"wrong signature": {h: frame.SignHandover([][]byte{[]byte("another master, not the Pod's...")}, testPodUID, mark), reason: frame.ReasonHandoverRefused},
		"digest mismatch": {h: altered, reason: frame.ReasonArgumentsDigestMismatch, signed: true},
		"replayed":        {h: mark, reason: frame.ReasonHandoverRefused, replay: true},
	} {
		t.Run(name, func(t *testing.T) {
			p := newSessionPod(t)
			p.start()
			op := p.operator()
			ran := filepath.Join(p.ws, "ran")
			if tc.replay {
				if _, err := op.call(mark); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(ran); err != nil {
					t.Fatalf("the first call did not run: %v", err)
				}
			}
			term, err := op.call(tc.h)
			if err != nil {
				t.Fatal(err)
			}
			var f frame.Frame
			if tc.signed {
				f = decodeFor(t, "call-mark", term)
			} else {
				f = p.signer.unsignedFrame([]byte(term))
			}
			if f.Reason != tc.reason || f.Stdout != "" {
				t.Fatalf("reply %+v", f)
			}
			if s, _ := p.wait(); s != frame.ExitRunnerError || p.endReason() != tc.reason {
				t.Fatalf("signer exit %d, log %q", s, p.serr.String())
			}
			if _, err := os.Stat(ran); err == nil {
				t.Fatal("the tool ran")
			}
		})
	}
}

// Nothing a call started outlives it: a daemon the tool left in its process group is dead
// before the next call runs (the body side kills the tool's group when the tool ends; as
// PID 1 it also kills every other process of the container, killOthers).
func TestSessionKillsWhatTheCallLeft(t *testing.T) {
	p := newSessionPod(t)
	killDaemon(t, filepath.Join(p.ws, "pid"))
	p.start()
	op := p.operator()
	term, err := op.call(sessionCall("call-daemon", `{"op":"daemon"}`))
	if err != nil {
		t.Fatal(err)
	}
	if f := decodeFor(t, "call-daemon", term); f.Stdout != "started\n" {
		t.Fatalf("call one: %+v", f)
	}
	term, err = op.call(sessionCall("call-check", `{"op":"check"}`))
	if err != nil {
		t.Fatal(err)
	}
	if f := decodeFor(t, "call-check", term); f.Stdout != "dead\n" {
		t.Fatalf("the daemon of call one is %q in call two", f.Stdout)
	}
	p.stop()
}

// Between calls /tmp, $HOME and the arguments' directory are emptied (a directory the tool
// made unreadable too), the directories themselves kept with their modes; the workspace
// keeps what the call wrote there.
func TestSessionWipesAllButTheWorkspace(t *testing.T) {
	p := newSessionPod(t)
	if err := os.Chmod(p.tmp, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	p.start()
	op := p.operator()
	term, err := op.call(sessionCall("call-write", `{"op":"write"}`))
	if err != nil {
		t.Fatal(err)
	}
	if f := decodeFor(t, "call-write", term); f.Stdout != "wrote\n" {
		t.Fatalf("call one: %+v", f)
	}
	term, err = op.call(sessionCall("call-list", `{"op":"list"}`))
	if err != nil {
		t.Fatal(err)
	}
	if f := decodeFor(t, "call-list", term); f.Stdout != "[][][f ][args.json ]" {
		t.Fatalf("call two sees /tmp, $HOME, the workspace, the arguments' directory: %q", f.Stdout)
	}
	if st, err := os.Stat(p.tmp); err != nil || st.Mode()&os.ModePerm != 0o777 || st.Mode()&os.ModeSticky == 0 {
		t.Fatalf("the /tmp stand-in: %v %v", st.Mode(), err)
	}
	p.stop()
}

// A call's credentials are redacted from its own output and counted in its own frame; the
// next call's frame counts only its own.
func TestSessionRedactsPerCall(t *testing.T) {
	p := newSessionPod(t)
	p.start()
	op := p.operator()
	h := sessionCall("call-secret", `{"op":"env"}`, "TOKEN=s3cr3t-value-123")
	h.SecretEnv = []string{"TOKEN"}
	term, err := op.call(resign(h))
	if err != nil {
		t.Fatal(err)
	}
	if f := decodeFor(t, "call-secret", term); f.Stdout != "|[REDACTED]|" || f.Redactions != 1 {
		t.Fatalf("call one: %+v", f)
	}
	term, err = op.call(sessionCall("call-plain", `{"op":"env"}`))
	if err != nil {
		t.Fatal(err)
	}
	if f := decodeFor(t, "call-plain", term); f.Stdout != "||" || f.Redactions != 0 || f.StdoutBytes != 2 {
		t.Fatalf("call two: %+v", f)
	}
	if got := p.serr.String(); strings.Contains(got, "s3cr3t-value-123") {
		t.Fatalf("the signer's log holds the credential: %q", got)
	}
	p.stop()
}
