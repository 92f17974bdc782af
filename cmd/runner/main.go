package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// stdin is where a warm runner reads its Handover (a variable for tests).
var stdin io.Reader = os.Stdin

func main() {
	os.Exit(realMain(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}

// realMain runs the runner and returns its exit code.
func realMain(argv []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	if len(argv) > 0 && argv[0] == "copy" {
		if len(argv) != 2 {
			logf(stderr, "usage: runner copy DEST")
			return frame.ExitRunnerError
		}
		return copyCommand(argv[1], stderr)
	}
	sigs := catchSignals()
	cfg, err := parseConfig(argv, lookupEnv, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		logf(stderr, "%v", err)
		f := failed(frame.Frame{ArgsDigest: cfg.argsDigest}, frame.ReasonInvalidConfiguration, frame.ExitRunnerError, err)
		return deliver(cfg, f, stdout, stderr)
	case cfg.copySelf != "":
		return copyCommand(cfg.copySelf, stderr)
	}
	if cfg.mode == modeBody {
		return bodySide(cfg, sigs, stderr)
	}
	var ln net.Listener
	if cfg.mode == modeSigner {
		if ln, err = listenSigner(cfg.signerAbstract, cfg.signerAddress); err != nil {
			f := failed(frame.Frame{ArgsDigest: cfg.argsDigest}, frame.ReasonInvalidConfiguration, frame.ExitRunnerError,
				fmt.Errorf("the runner could not listen for the tool's side: %w", err))
			return deliver(cfg, f, stdout, stderr)
		}
		defer ln.Close()
		logf(stderr, "listening for the tool's side at %s", ln.Addr())
		if cfg.session {
			return runSession(cfg, ln, sigs, stderr)
		}
	}
	if cfg.warm {
		var ok bool
		if cfg, ok = awaitHandover(cfg, stdin, sigs, stderr); !ok {
			return 0 // stopped while idle: a pool Pod nobody claimed, nothing to report
		}
	}
	return deliver(cfg, execute(cfg, ln, sigs, stderr), stdout, stderr)
}

// deliver writes the frame: the log block (if any) to stdout in one write,
// then the termination message, signed with the frame key. As PID 1 it first
// kills every other process, so that nothing the tool left behind can write
// the termination message after the runner did. It returns the runner's exit code: the
// frame's, or ExitRunnerError when the termination message cannot be written.
func deliver(cfg config, f frame.Frame, stdout, stderr io.Writer) int {
	if f.Reason != "" {
		logf(stderr, "%s: %s", f.Reason, f.Error)
	}
	if len(cfg.frameKey) == 0 {
		logf(stderr, "no frame key for this attempt (%s): the frame is not signed, and the operator will not trust it", podcontract.EnvAttemptKey)
	}
	killOthers()
	term, block, err := frame.Encoder{Key: cfg.frameKey, Marker: cfg.marker}.Encode(f)
	if err != nil {
		logf(stderr, "encoding result: %v (exit code %d)", err, f.ExitCode)
		return frame.ExitRunnerError
	}
	if block != nil {
		if _, err := stdout.Write(block); err != nil {
			logf(stderr, "writing result to the log: %v", err)
		}
	}
	if err := writeTermination(cfg.terminationPath, term); err != nil {
		logf(stderr, "writing termination message: %v (exit code %d)", err, f.ExitCode)
		return frame.ExitRunnerError
	}
	if cfg.warm {
		// The same signed bytes, for the operator's attach stream: it need not wait for
		// the kubelet's next status report. Written after the durable record.
		_, _ = stdout.Write(frame.ResultLine(term))
	}
	return f.ExitCode
}

func writeTermination(path string, msg []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, msg, 0o644)
}

func copyCommand(dest string, stderr io.Writer) int {
	if err := copySelf(dest); err != nil {
		logf(stderr, "copy: %v", err)
		return frame.ExitRunnerError
	}
	return 0
}

// copySelf copies the running executable to dest (mode 0755), creating its
// directory, through a temporary file renamed into place.
func copySelf(dest string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(exe)
	if err != nil {
		return err
	}
	defer src.Close()
	dir := filepath.Dir(dest)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".runner-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	_, err = io.Copy(tmp, src)
	err = errors.Join(err, tmp.Chmod(0o755), tmp.Close())
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dest)
}

func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "toolgate-runner: "+format+"\n", args...)
}
