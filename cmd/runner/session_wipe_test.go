package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The link volume is wiped between session calls like the scratch directories, but for
// the signer's socket: a file the tool left there is gone, the socket stays.
func TestResetWipesTheLinkVolumeButTheSocket(t *testing.T) {
	link, tmp := t.TempDir(), t.TempDir()
	sock := filepath.Join(link, "signer.sock")
	for _, p := range []string{sock, filepath.Join(link, "left-by-the-tool"), filepath.Join(tmp, "leftover")} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config{wipeDirs: []string{tmp}, signerAddress: sock, workspace: t.TempDir(), argsFile: "-"}
	if err := resetAfterCall(cfg); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string][]string{link: {"signer.sock"}, tmp: nil} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if len(got) != len(want) || (len(want) > 0 && got[0] != want[0]) {
			t.Errorf("%s holds %v after the reset, want %v", dir, got, want)
		}
	}
}
