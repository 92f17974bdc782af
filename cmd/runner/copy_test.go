package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

func TestCopySelf(t *testing.T) {
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"copy"}, {podcontract.CopySelfFlag}} {
		in := newInvocation(t)
		dest := filepath.Join(in.dir, "shared", "bin", "runner")
		in.argv = append(slices.Clone(argv), dest)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := in.command(ctx).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%v: %v: %s", argv, err, out)
		}
		st, err := os.Stat(dest)
		if err != nil || st.Mode().Perm() != 0o755 {
			t.Fatalf("%v: %v %v", argv, st, err)
		}
		if got, _ := os.ReadFile(dest); !bytes.Equal(got, self) {
			t.Fatalf("%v: copy differs from the executable", argv)
		}
		if _, err := os.Stat(in.env[podcontract.EnvTerminationPath]); err == nil {
			t.Fatalf("%v: copy wrote a termination message", argv)
		}
	}
}

func TestInvalidConfigurationFrame(t *testing.T) {
	in := newInvocation(t, sh("echo should-not-run")...)
	in.env[podcontract.EnvMaxOutput] = "lots"
	o := in.run()
	wantReason(t, o, frame.ExitRunnerError, frame.ReasonInvalidConfiguration)
	if o.frame.Stdout != "" {
		t.Fatalf("tool ran: %q", o.frame.Stdout)
	}
	// A custom marker is used for the log block.
	in = newInvocation(t, "--", "head", "-c", "300000", "/dev/urandom")
	in.env[podcontract.EnvResultMarker] = "my.marker"
	o = in.run()
	if !bytes.Contains(o.stdout, []byte("--my.marker-begin ")) || o.frame.StdoutBytes != 300000 {
		t.Fatalf("log block without custom marker (stdout %.80q)", o.stdout)
	}
}
