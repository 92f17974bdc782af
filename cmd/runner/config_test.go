package main

import (
	"errors"
	"flag"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

func lookupEnvFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestParseConfigDefaultsAndOverrides(t *testing.T) {
	env := map[string]string{podcontract.EnvArgs: "{}", podcontract.EnvArgsDigest: "sha256:x", podcontract.EnvMaxOutput: "10", podcontract.EnvResultMarker: "m1"}
	cfg, err := parseConfig([]string{"--stderr-tail", "7", "--max-output=20", "--", "tool", "-x"}, lookupEnvFrom(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := config{
		args: []byte("{}"), argsDigest: "sha256:x", argsFile: defaultArgsFile, maxOutput: 20, stderrTail: 7,
		terminationPath: podcontract.TerminationPath, marker: "m1", ioGrace: defaultIOGrace, command: []string{"tool", "-x"},
		signerAddress: podcontract.SignerSocket, signerAbstract: podcontract.SignerAbstractSocket,
		egressCABundle: podcontract.EgressCABundle, // beside the signer's socket, in the link volume
		sessionTLSDir:  podcontract.SessionTLSDir, sessionAddr: ":" + strconv.Itoa(podcontract.SessionPort),
		wipeDirs: []string{"/tmp", "/dev/shm"}, workspace: podcontract.WorkspaceMountPath,
	}
	if diff := cmp.Diff(want, cfg, cmp.AllowUnexported(config{})); diff != "" {
		t.Fatalf("config (-want +got):\n%s", diff)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		argv []string
	}{
		"bad env int":           {map[string]string{podcontract.EnvMaxOutput: "1MiB"}, []string{"--", "x"}},
		"too large":             {nil, []string{"--max-output", "999999999", "--", "x"}},
		"negative tail":         {map[string]string{podcontract.EnvStderrTail: "-1"}, []string{"--", "x"}},
		"bad marker":            {map[string]string{podcontract.EnvResultMarker: "a b"}, []string{"--", "x"}},
		"no command":            {nil, nil},
		"unknown flag":          {nil, []string{"--nope", "--", "x"}},
		"zero io grace":         {nil, []string{"--io-grace=0s", "--", "x"}},
		"empty argsfile":        {nil, []string{"--args-file=", "--", "x"}},
		"bad attempt key":       {map[string]string{podcontract.EnvAttemptKey: "short"}, []string{"--", "x"}},
		"bad handover key":      {map[string]string{podcontract.EnvHandoverKeys: "short"}, []string{"--", "x"}},
		"signer with a command": {nil, []string{podcontract.SignFlag, "--", "x"}},
		"signer and body":       {nil, []string{podcontract.SignFlag, podcontract.BodyFlag, "--", "x"}},
		"body without command":  {nil, []string{podcontract.BodyFlag}},
		"warm body side":        {map[string]string{podcontract.EnvWarm: podcontract.WarmOn}, []string{podcontract.BodyFlag, "--", "x"}},
		"session alone":         {map[string]string{podcontract.EnvSession: podcontract.SessionOn}, []string{"--", "x"}},
		"warm session":          {map[string]string{podcontract.EnvSession: podcontract.SessionOn, podcontract.EnvWarm: podcontract.WarmOn}, []string{podcontract.SignFlag}},
	} {
		cfg, err := parseConfig(tc.argv, lookupEnvFrom(tc.env), io.Discard)
		if err == nil {
			t.Errorf("%s: no error", name)
		}
		if cfg.marker == "a b" || cfg.terminationPath == "" {
			t.Errorf("%s: unusable config for reporting: %+v", name, cfg)
		}
	}
	if _, err := parseConfig([]string{"-h"}, lookupEnvFrom(nil), io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	cfg, err := parseConfig([]string{podcontract.CopySelfFlag, "/x/runner", "--io-grace=1s"}, lookupEnvFrom(nil), io.Discard)
	if err != nil || cfg.copySelf != "/x/runner" || cfg.ioGrace != time.Second {
		t.Fatalf("copy-self: %+v %v", cfg, err)
	}
}
