package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/cmd/tools/internal/wsfs"
)

func TestListAndGlob(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.md", "src/b.go", "src/deep/c.go", "src/deep/d.md"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := wsfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	cases := []struct {
		a    args
		want string
	}{
		{args{}, "a.md,src/"},
		{args{Recursive: true}, "a.md,src/,src/b.go,src/deep/,src/deep/c.go,src/deep/d.md"},
		{args{Pattern: "**/*.go"}, "src/b.go,src/deep/c.go"},
		{args{Pattern: "*.md"}, "a.md"},
		{args{Path: "src", Pattern: "*/*.md"}, "deep/d.md"},
	}
	for _, c := range cases {
		got, err := list(r, c.a)
		if err != nil {
			t.Fatalf("%+v: %v", c.a, err)
		}
		if s := strings.Join(got.(result).Entries, ","); s != c.want {
			t.Errorf("%+v: got %s, want %s", c.a, s, c.want)
		}
	}
	if _, err := list(r, args{Path: "../"}); err == nil {
		t.Error("listed outside the workspace")
	}
	if _, err := list(r, args{Pattern: "[x"}); err == nil {
		t.Error("a malformed pattern was taken")
	}
}
