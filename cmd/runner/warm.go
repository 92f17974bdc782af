package main

import (
	"io"
	"os"

	"github.com/toolgate/toolgate/pkg/frame"
)

// awaitHandover is the warm mode ($TOOLGATE_WARM=1, a Tool's pool Pod): the Pod was
// started before its call existed, so the runner waits for the operator's one Handover on
// stdin (pods/attach; the container has stdinOnce, so stdin closes after that attach) and
// takes the arguments and their expected digest from it. The digest check in execute is
// the cold path's: the body has not started yet, so nothing in the sandbox can have
// written the Handover. ok is false when the runner was told to stop (SIGTERM: the pool
// Pod was deleted while idle) before a Handover came. A Handover that cannot be read
// (stdin closed early, malformed) is reported through the frame: cfg.handoverErr.
func awaitHandover(cfg config, in io.Reader, sigs <-chan os.Signal, stderr io.Writer) (config, bool) {
	cfg.warm = true
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
		cfg.args, cfg.argsDigest, cfg.traceparent = r.h.Arguments, r.h.ArgumentsDigest, r.h.Traceparent
		return cfg, true
	case <-sigs:
		logf(stderr, "stopped while waiting for a call")
		return cfg, false
	}
}
