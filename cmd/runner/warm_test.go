package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// runWarm runs the runner in warm mode with stdin as its standard input and returns the
// outcome decoded from the termination message, plus what its stdout's result line holds.
func runWarm(t *testing.T, in *invocation, stdin []byte) (outcome, string) {
	t.Helper()
	warmEnv(in)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := in.command(ctx)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &stdout, &stderr
	_ = cmd.Run()
	line, ok := frame.LastResultLine(stdout.Bytes())
	if !ok {
		t.Fatalf("no result line on stdout %q (stderr %q)", stdout.Bytes(), stderr.Bytes())
	}
	return in.outcome(cmd, nil, stderr.Bytes()), line
}

// warmEnv is a pool Pod's environment: no call and no key in it, the public key of the
// namespace's handovers, the Pod's own uid.
func warmEnv(in *invocation) {
	for _, name := range []string{podcontract.EnvArgs, podcontract.EnvArgsDigest, podcontract.EnvAttemptKey} {
		delete(in.env, name)
	}
	in.env[podcontract.EnvWarm] = "1"
	in.env[podcontract.EnvPodUID] = testPodUID
	in.env[podcontract.EnvHandoverKeys] = frame.EncodePublicKeys([]ed25519.PublicKey{frame.HandoverPublicKey(testKey)})
}

// authenticated is h as the operator hands it over for attempt 1 of testCallUID (with that
// attempt's key), signed with each of masters for testPodUID.
func authenticated(h frame.Handover, masters ...[]byte) frame.Handover {
	h.CallUID, h.Attempt, h.AttemptKey = testCallUID, 1, testAttemptKey
	if len(masters) == 0 {
		return h
	}
	return frame.SignHandover(masters, testPodUID, h)
}

func handoverLine(t *testing.T, h frame.Handover) []byte {
	t.Helper()
	b, err := frame.EncodeHandover(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWarmHandoverRunsBodyWithFrozenBytes(t *testing.T) {
	in := newInvocation(t, sh(`cat; printf '|%s' "$TRACEPARENT"`)...)
	in.env[podcontract.EnvArgsFile] = podcontract.NoArgsFile
	h := authenticated(frame.Handover{Arguments: []byte(testArgs), ArgumentsDigest: frame.DigestOf([]byte(testArgs)), Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, testKey)
	o, line := runWarm(t, in, handoverLine(t, h))
	if o.code != 0 || o.frame.Reason != "" {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
	if got, want := o.frame.Stdout, testArgs+"|"+h.Traceparent; got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
	if line != string(o.term) {
		t.Fatalf("the result line %q is not the termination message %q", line, o.term)
	}
}

func TestWarmDigestMismatchDoesNotRunBody(t *testing.T) {
	in := newInvocation(t, sh(`touch "$MARK"`)...)
	mark := filepath.Join(in.dir, "ran")
	in.env["MARK"] = mark
	h := authenticated(frame.Handover{Arguments: []byte(testArgs), ArgumentsDigest: frame.DigestOf([]byte(`{"path":"/etc/shadow"}`))}, testKey)
	o, _ := runWarm(t, in, handoverLine(t, h))
	wantReason(t, o, frame.ExitRunnerError, frame.ReasonArgumentsDigestMismatch)
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the body ran with altered arguments")
	}
}

func TestWarmWithoutHandoverDoesNotRunBody(t *testing.T) {
	for name, stdin := range map[string]string{"closed": "", "malformed": "{\"arguments\":1}\n"} {
		t.Run(name, func(t *testing.T) {
			in := newInvocation(t, sh(`touch "$MARK"`)...)
			mark := filepath.Join(in.dir, "ran")
			in.env["MARK"] = mark
			in.unsigned = true // no Handover: no call to sign for
			o, _ := runWarm(t, in, []byte(stdin))
			wantReason(t, o, frame.ExitRunnerError, frame.ReasonInvalidConfiguration)
			if !strings.Contains(o.frame.Error, "no arguments were handed over") {
				t.Fatalf("error %q", o.frame.Error)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("the body ran without a handover")
			}
		})
	}
}

// An idle pool Pod deleted: SIGTERM while waiting for a Handover ends the runner at once,
// without running the body or writing a frame.
func TestWarmStoppedWhileIdle(t *testing.T) {
	in := newInvocation(t, sh(`touch "$MARK"`)...)
	mark := filepath.Join(in.dir, "ran")
	in.env["MARK"] = mark
	warmEnv(in)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := in.command(ctx)
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdinW.Close()
	stderrR, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = stdinR
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdinR.Close()
	// The runner says it waits once its signal handlers are in place.
	line, err := bufio.NewReader(stderrR).ReadString('\n')
	if err != nil || !strings.Contains(line, "waiting for a call") {
		t.Fatalf("stderr %q (%v)", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("runner ended %v", err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the body ran")
	}
	if _, err := os.Stat(in.env[podcontract.EnvTerminationPath]); err == nil {
		t.Fatal("a frame was written for a call that never came")
	}
}

// A Handover the operator did not authenticate for this Pod — written by anyone who can
// attach to an idle pool Pod but cannot read the namespace's frame key Secret — is refused:
// the body does not run, and the frame, unsigned, vouches for nothing (never a success).
func TestWarmForgedHandoverRefused(t *testing.T) {
	other := []byte("another master, not the Pod's...")
	args := []byte(`{"path":"/etc/shadow"}`)
	forged := frame.Handover{Arguments: args, ArgumentsDigest: frame.DigestOf(args)}
	for name, h := range map[string]frame.Handover{
		"no auth":           authenticated(forged),
		"another master":    authenticated(forged, other),
		"another Pod":       signedFor(forged, "another-pod", forged.ArgumentsDigest),
		"auth for a digest": signedFor(forged, testPodUID, frame.DigestOf([]byte(testArgs))),
	} {
		t.Run(name, func(t *testing.T) {
			in := newInvocation(t, sh(`touch "$MARK"; echo ran`)...)
			mark := filepath.Join(in.dir, "ran")
			in.env["MARK"] = mark
			in.unsigned = true
			o, _ := runWarm(t, in, handoverLine(t, h))
			wantReason(t, o, frame.ExitRunnerError, frame.ReasonHandoverRefused)
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("the body ran with a forged handover")
			}
			if o.frame.ArgsDigest != "" || o.frame.Stdout != "" {
				t.Fatalf("the refusal names arguments or output: %+v", o.frame)
			}
		})
	}
}

// signedFor is h with the operator's signature of it for pod, had it named digest.
func signedFor(h frame.Handover, pod, digest string) frame.Handover {
	real := authenticated(h)
	real.ArgumentsDigest = digest
	h.CallUID, h.Attempt, h.AttemptKey, h.Auth = real.CallUID, real.Attempt, real.AttemptKey, frame.SignHandover([][]byte{testKey}, pod, real).Auth
	return h
}

// A Handover taken is signed for the call and attempt it names, with the attempt key it
// brought: after a rotation a Pod started before it holds the old public key, and the
// operator signs with both masters.
func TestWarmHandoverSignsForItsAttempt(t *testing.T) {
	newMaster := []byte("the master after the rotation..!")
	in := newInvocation(t, sh(`echo ran`)...)
	h := authenticated(frame.Handover{Arguments: []byte(testArgs), ArgumentsDigest: frame.DigestOf([]byte(testArgs))}, newMaster, testKey)
	o, _ := runWarm(t, in, handoverLine(t, h)) // decodes with AttemptKey(testKey, testCallUID, 1)
	if o.code != 0 || o.frame.Stdout != "ran\n" || o.frame.ArgsDigest != h.ArgumentsDigest {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
	for name, key := range map[string][]byte{
		"the master":      testKey,
		"another attempt": frame.AttemptKey(testKey, testCallUID, 2),
		"the new master":  frame.AttemptKey(newMaster, testCallUID, 1),
	} {
		if _, _, err := (frame.Decoder{Key: key}).DecodeTermination(string(o.term)); !errors.Is(err, frame.ErrSignature) {
			t.Errorf("%s verifies the frame: %v", name, err)
		}
	}
}
