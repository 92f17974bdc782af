package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// redactVar is the i-th workspace credential's variable.
func redactVar(i int) string { return podcontract.EnvRedactPrefix + strconv.Itoa(i) }

// The values a session's workspace may hold are read from every TOOLGATE_REDACT_<i> set
// below the bound, gaps included (a Secret deleted since leaves its variable unset); one
// too short to redact is left out, never refused.
func TestReadRedactions(t *testing.T) {
	env := map[string]string{
		redactVar(0): "a-workspace-token",
		redactVar(1): "  abc \n", // too short once trimmed
		redactVar(3): "another-token-value\n",
		redactVar(podcontract.MaxWorkspaceCredentials): "past-the-bound-value",
	}
	got := readRedactions(lookupEnvFrom(env))
	want := []credential{{redactVar(0), []byte("a-workspace-token")}, {redactVar(3), []byte("another-token-value\n")}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("redactions %q, want %q", got, want)
	}
	if err := checkCredentials(got); err != nil {
		t.Fatalf("the values kept are all redactable: %v", err)
	}
}

// writeValueFile puts value in a file of the invocation's directory, as a session's file
// holds what an earlier body wrote, and returns its path.
func writeValueFile(t *testing.T, dir, value string) string {
	t.Helper()
	path := filepath.Join(dir, "workspace-file")
	if err := os.WriteFile(path, []byte(value), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A runner alone: a workspace credential's value is redacted from what the body prints (a
// file an earlier call wrote), the body's environment has none of the variables, and a
// value too short to redact does not stop the call.
func TestWorkspaceCredentialRedactedAndHidden(t *testing.T) {
	const value = "ghp_workspace-token-1234"
	in := newInvocation(t, sh(`env; cat "$FILE"`)...)
	in.env[redactVar(0)] = value
	in.env[redactVar(1)] = "short"
	in.env["FILE"] = writeValueFile(t, in.dir, value)
	o := in.run()
	if o.code != 0 || o.frame.Reason != "" {
		t.Fatalf("exit %d frame %+v", o.code, o.frame)
	}
	if strings.Contains(o.frame.Stdout, podcontract.EnvRedactPrefix) {
		t.Errorf("the body's environment has the workspace credentials: %s", o.frame.Stdout)
	}
	if !strings.HasSuffix(o.frame.Stdout, "\n"+redactedMark) || o.frame.Redactions != 1 {
		t.Fatalf("stdout %q, redactions %d", o.frame.Stdout, o.frame.Redactions)
	}
	wantNowhere(t, o, value)
}

// Split as in a tool Pod: only the signer is given the workspace's values; it redacts them
// from what the body side streams (a file and a file name an earlier call wrote).
func TestSplitSignerRedactsWorkspaceCredentials(t *testing.T) {
	const value = "ghp_workspace-token-5678"
	p := newPair(t, `cat "$FILE"; echo; echo "name-$(cat "$FILE").txt"; env | grep -c `+podcontract.EnvRedactPrefix+` || true`)
	p.signer.env[redactVar(0)] = value
	p.body.env["FILE"] = writeValueFile(t, p.body.dir, value)
	o, bodyCode := p.run(nil)
	want := redactedMark + "\nname-" + redactedMark + ".txt\n0\n"
	if o.code != 0 || bodyCode != 0 || o.frame.Stdout != want || o.frame.Redactions != 2 {
		t.Fatalf("signer exit %d, body side exit %d, frame %+v", o.code, bodyCode, o.frame)
	}
	wantNowhere(t, o, value)
}
