package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/cmd/tools/internal/wsfs"
)

func sampleRoot(t *testing.T) *wsfs.Root {
	t.Helper()
	dir := t.TempDir()
	base := filepath.Join(dir, "samples")
	must(t, os.MkdirAll(filepath.Join(base, "docs"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "hello.txt"), []byte("hello\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "docs", "a.md"), []byte("# a\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("s3cr3t"), 0o644))
	must(t, os.Symlink(filepath.Join(dir, "secret"), filepath.Join(base, "escape")))
	must(t, os.WriteFile(filepath.Join(base, "bin"), []byte{0xff, 0xfe}, 0o644))
	root, err := wsfs.Open(base)
	must(t, err)
	t.Cleanup(func() { _ = root.Close() })
	return root
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReadInsideRoot(t *testing.T) {
	root := sampleRoot(t)
	for _, p := range []string{"hello.txt", "./hello.txt", root.Base + "/hello.txt", "docs/../hello.txt"} {
		got, err := read(root, p, 100)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if r := got.(fileResult); r.Content != "hello\n" || r.Path != root.Base+"/hello.txt" {
			t.Fatalf("%s: %+v", p, r)
		}
	}
}

func TestReadRefusesOutside(t *testing.T) {
	root := sampleRoot(t)
	for _, p := range []string{"escape", "/etc/passwd", root.Base + "/../secret", root.Base + "x/hello.txt", "../secret", "../../hello.txt"} {
		got, err := read(root, p, 100)
		if err == nil || !strings.Contains(err.Error(), "outside") {
			t.Fatalf("%s: got %+v, %v", p, got, err)
		}
	}
}

func TestReadListsFolders(t *testing.T) {
	root := sampleRoot(t)
	got, err := read(root, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if r := got.(fileResult); strings.Join(r.Entries, ",") != "bin,docs/,escape,hello.txt" {
		t.Fatalf("%+v", r)
	}
}

func TestReadTruncatesAndRefusesBinary(t *testing.T) {
	root := sampleRoot(t)
	got, err := read(root, "hello.txt", 3)
	if err != nil {
		t.Fatal(err)
	}
	if r := got.(fileResult); r.Content != "hel" || !r.Truncated || r.Size != 6 {
		t.Fatalf("%+v", r)
	}
	if _, err := read(root, "bin", 100); err == nil || !strings.Contains(err.Error(), "not a text file") {
		t.Fatalf("got %v", err)
	}
}
