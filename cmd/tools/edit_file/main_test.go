package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/cmd/tools/internal/wsfs"
)

func root(t *testing.T, files map[string]string) *wsfs.Root {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := wsfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func content(t *testing.T, r *wsfs.Root, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.Base, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestEditReplacesTheUniqueOccurrence(t *testing.T) {
	r := root(t, map[string]string{"a.go": "func a() {}\nfunc b() {}\n"})
	if _, err := edit(r, args{Path: "a.go", OldString: "func b()", NewString: "func c()"}); err != nil {
		t.Fatal(err)
	}
	if got := content(t, r, "a.go"); got != "func a() {}\nfunc c() {}\n" {
		t.Fatalf("got %q", got)
	}
}

func TestEditRefusesAbsentOrRepeatedStrings(t *testing.T) {
	const text = "x := 1\nx := 1\ny := 2\n"
	cases := []struct {
		old, want string
	}{
		{"x := 1", "occurs 2 times"},
		{"z := 3", "not found"},
		{"", "old_string is empty"},
	}
	for _, c := range cases {
		r := root(t, map[string]string{"f.go": text})
		_, err := edit(r, args{Path: "f.go", OldString: c.old, NewString: "w := 0"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("old %q: got %v, want %q", c.old, err, c.want)
		}
		if got := content(t, r, "f.go"); got != text {
			t.Errorf("old %q: the file changed to %q", c.old, got)
		}
	}
}

func TestEditRefusesPathsOutside(t *testing.T) {
	r := root(t, map[string]string{"f": "a"})
	for _, p := range []string{"../f", "/etc/hosts"} {
		if _, err := edit(r, args{Path: p, OldString: "a", NewString: "b"}); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("%s: got %v", p, err)
		}
	}
}
