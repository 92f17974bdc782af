package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/cmd/tools/internal/wsfs"
)

func TestGrepFindsLinesAndSkipsLinksOut(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(base, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(base, "src", "a.go"), "package a\n// TODO one\nfunc A() {}\n")
	write(filepath.Join(base, "notes.md"), "todo two\n")
	write(filepath.Join(dir, "secret"), "TODO secret\n")
	if err := os.Symlink(filepath.Join(dir, "secret"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	r, err := wsfs.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	got, err := grep(r, args{Pattern: "todo", IgnoreCase: true})
	if err != nil {
		t.Fatal(err)
	}
	res := got.(result)
	if len(res.Matches) != 2 || res.Matches[0].Path != base+"/notes.md" || res.Matches[1].Line != 2 {
		t.Fatalf("%+v", res)
	}
	got, err = grep(r, args{Pattern: "TODO", Glob: "*.go"})
	if err != nil || len(got.(result).Matches) != 1 {
		t.Fatalf("%+v, %v", got, err)
	}
	if _, err := grep(r, args{Pattern: "x", Path: "../"}); err == nil {
		t.Error("searched outside the workspace")
	}
	if _, err := grep(r, args{Pattern: "("}); err == nil {
		t.Error("a malformed pattern was taken")
	}
}
