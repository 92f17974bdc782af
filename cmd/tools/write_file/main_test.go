package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/cmd/tools/internal/wsfs"
)

func TestWriteCreatesAndRefusesEscapes(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "ws")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(base, "up")); err != nil {
		t.Fatal(err)
	}
	r, err := wsfs.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	text := "hello"
	if _, err := write(r, args{Path: "src/main.txt", Content: &text}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(base, "src", "main.txt")); string(got) != text {
		t.Fatalf("got %q", got)
	}
	for _, p := range []string{"../x", "up/x", "/tmp/x", ""} {
		if _, err := write(r, args{Path: p, Content: &text}); err == nil {
			t.Errorf("%q: written", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Fatalf("a file was written outside the workspace: %v", err)
	}
	if _, err := write(r, args{Path: "y"}); err == nil || !strings.Contains(err.Error(), "content is missing") {
		t.Fatalf("got %v", err)
	}
}
