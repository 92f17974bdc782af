package main

import (
	"errors"
	"io"
	"os"

	"github.com/toolgate/toolgate/pkg/frame"
)

// awaitHandover is the warm mode ($TOOLGATE_WARM=1, a Tool's pool Pod): the Pod was
// started before its call existed, so the runner waits for the operator's one Handover on
// stdin (pods/attach; the container has stdinOnce, so stdin closes after that attach) and
// takes the arguments, their expected digest and the attempt's frame key from it — only
// when it is signed for this Pod with a key whose public half the Pod holds
// (frame.VerifyHandover): whoever can attach to the Pod but does not hold the namespace's
// master is refused (errHandoverRefused), the body is not run, and the unsigned frame
// vouches for nothing; stdin is then closed, so the Pod is spent and its pool replaces it.
// The frame of a Handover taken is signed with the attempt key it brought: until then the
// Pod holds no secret at all. The digest check in execute is the cold
// path's: the body has not started yet, so nothing in the sandbox can have written the
// Handover. ok is false when the runner was told to stop (SIGTERM: the pool
// Pod was deleted while idle) before a Handover came. A Handover that cannot be read
// (stdin closed early, malformed) is reported through the frame: cfg.handoverErr.
func awaitHandover(cfg config, in io.Reader, sigs <-chan os.Signal, stderr io.Writer) (config, bool) {
	logf(stderr, "warm: waiting for a call's arguments on stdin")
	type result struct {
		h   frame.Handover
		err error
	}
	got := make(chan result, 1)
	go func() {
		h, err := frame.ReadHandover(in)
		got <- result{h, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			logf(stderr, "%v", r.err)
			cfg.handoverErr = r.err
			return cfg, true
		}
		if !frame.VerifyHandover(cfg.handoverKeys, cfg.podUID, r.h) {
			// Whoever wrote it does not hold the namespace's master: not the operator.
			logf(stderr, "%v", errHandoverRefused)
			cfg.handoverErr = errHandoverRefused
			return cfg, true
		}
		cfg.args, cfg.argsDigest, cfg.traceparent = r.h.Arguments, r.h.ArgumentsDigest, r.h.Traceparent
		cfg.frameKey = r.h.AttemptKey
		return cfg, true
	case <-sigs:
		logf(stderr, "stopped while waiting for a call")
		return cfg, false
	}
}

// errHandoverRefused is a Handover whose auth does not verify, as the frame says it.
var errHandoverRefused = errors.New("the handover is not signed by the operator for this Pod, so the tool was not run")
