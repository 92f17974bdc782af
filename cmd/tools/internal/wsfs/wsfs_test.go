package wsfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is a root with a file, a folder, a symbolic link pointing out of the root (to a
// secret beside it), one pointing out through a folder, and one pointing inside.
func fixture(t *testing.T) (*Root, string) {
	t.Helper()
	dir := t.TempDir()
	base := filepath.Join(dir, "ws")
	must(t, os.MkdirAll(filepath.Join(base, "src"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "src", "a.txt"), []byte("alpha\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("s3cr3t"), 0o644))
	must(t, os.Symlink(filepath.Join(dir, "secret"), filepath.Join(base, "out")))
	must(t, os.Symlink("..", filepath.Join(base, "up")))
	must(t, os.Symlink("src/a.txt", filepath.Join(base, "in")))
	r, err := Open(base)
	must(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r, dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRelRefusesLexicalEscapes(t *testing.T) {
	r, _ := fixture(t)
	for _, p := range []string{"..", "../secret", "src/../../secret", "/etc/passwd", r.Base + "/../secret", r.Base + "x/a.txt", "a\x00b"} {
		if rel, err := r.Rel(p); err == nil {
			t.Errorf("Rel(%q) = %q, want a refusal", p, rel)
		}
	}
	for p, want := range map[string]string{"": ".", ".": ".", "src/a.txt": "src/a.txt", r.Base: ".", r.Base + "/src/a.txt": "src/a.txt", "src/../src/a.txt": "src/a.txt"} {
		if got, err := r.Rel(p); err != nil || got != want {
			t.Errorf("Rel(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
}

func TestSymlinksOutAreRefused(t *testing.T) {
	r, dir := fixture(t)
	for _, rel := range []string{"out", "up/secret", "up/ws/src/a.txt"} {
		if data, _, _, err := r.ReadText(rel, 100); err == nil || !errors.Is(err, ErrEscape) {
			t.Errorf("ReadText(%q) = %q, %v; want ErrEscape", rel, data, err)
		}
		if err := r.WriteFile(rel, []byte("x")); err == nil || !errors.Is(err, ErrEscape) {
			t.Errorf("WriteFile(%q) = %v; want ErrEscape", rel, err)
		}
	}
	if err := r.WriteFile("up/planted", []byte("x")); err == nil {
		t.Error("WriteFile through a link to the parent succeeded")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "secret")); string(got) != "s3cr3t" {
		t.Fatalf("the file outside the root changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "planted")); !os.IsNotExist(err) {
		t.Fatalf("a file was planted outside the root: %v", err)
	}
	if data, _, _, err := r.ReadText("in", 100); err != nil || string(data) != "alpha\n" {
		t.Fatalf("a link inside the root: %q, %v", data, err)
	}
}

func TestWriteFileCreatesFoldersAndKeepsMode(t *testing.T) {
	r, _ := fixture(t)
	must(t, r.WriteFile("new/deep/b.txt", []byte("beta")))
	data, _, _, err := r.ReadText("new/deep/b.txt", 100)
	if err != nil || string(data) != "beta" {
		t.Fatalf("%q, %v", data, err)
	}
	if err := r.WriteFile("src", []byte("x")); err == nil || !strings.Contains(err.Error(), "is a folder") {
		t.Fatalf("writing over a folder: %v", err)
	}
}

func TestReadOnlyRootRefusesWrites(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file modes")
	}
	r, _ := fixture(t)
	must(t, os.Chmod(filepath.Join(r.Base, "src"), 0o555))
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(r.Base, "src"), 0o755) })
	if err := r.WriteFile("src/c.txt", []byte("x")); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("got %v", err)
	}
}

func TestOpenNamesAMissingWorkspace(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "absent")); err == nil || !strings.Contains(err.Error(), "not mounted") {
		t.Fatalf("got %v", err)
	}
}

// A folder swapped for a symbolic link pointing out of the root while the tool reads
// through it (check-then-open) never yields the file outside: os.Root opens each component
// beneath the root, there is no separate check to race.
func TestSwappedFolderNeverLeaksTheOutside(t *testing.T) {
	r, dir := fixture(t)
	outside := filepath.Join(dir, "outside")
	must(t, os.MkdirAll(outside, 0o755))
	must(t, os.WriteFile(filepath.Join(outside, "a.txt"), []byte("SECRET\n"), 0o644))
	src := filepath.Join(r.Base, "src")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Rename(src, src+".real")
			_ = os.Symlink(outside, src)
			_ = os.Remove(src)
			_ = os.Rename(src+".real", src)
		}
	}()
	leaks := 0
	for range 20000 {
		if data, _, _, err := r.ReadText("src/a.txt", 100); err == nil && string(data) == "SECRET\n" {
			leaks++
		}
	}
	close(stop)
	<-done
	if leaks > 0 {
		t.Fatalf("read the file outside the root %d times", leaks)
	}
}
