package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// tarEntry is what a test checks about one tar header.
type tarEntry struct {
	Name string
	Type byte
	Mode int64
	Size int64
	UID  int
}

func readTar(t *testing.T, data []byte) []tarEntry {
	t.Helper()
	var got []tarEntry
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		if !hdr.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: mtime %v, want the epoch", hdr.Name, hdr.ModTime)
		}
		got = append(got, tarEntry{Name: hdr.Name, Type: hdr.Typeflag, Mode: hdr.Mode, Size: hdr.Size, UID: hdr.Uid})
	}
}

func writeTemp(t *testing.T, name string, perm os.FileMode, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLayerContainsFilesWithModes(t *testing.T) {
	exe := writeTemp(t, "runner", 0o700, "#!binary")
	data := writeTemp(t, "data", 0o600, "hello")
	var entries []entry
	for _, arg := range []string{exe + "=" + podcontract.ImageRunner, data + "=/etc/data", data + "=/etc/secret:0400"} {
		e, err := parseFile(arg)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	d, err := parseDir("/var/cache:0700")
	if err != nil {
		t.Fatal(err)
	}
	layer, err := layerBytes(append(entries, d), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := []tarEntry{
		{Name: "dev/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "etc/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "etc/data", Type: tar.TypeReg, Mode: 0o644, Size: 5},
		{Name: "etc/secret", Type: tar.TypeReg, Mode: 0o400, Size: 5},
		{Name: "tmp/", Type: tar.TypeDir, Mode: 0o1777},
		{Name: "toolgate/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "toolgate/runner", Type: tar.TypeReg, Mode: 0o755, Size: 8},
		{Name: "var/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "var/cache/", Type: tar.TypeDir, Mode: 0o700},
	}
	if diff := cmp.Diff(want, readTar(t, layer)); diff != "" {
		t.Errorf("layer entries (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	exe := writeTemp(t, "x", 0o755, "x")
	for _, arg := range []string{"", "noequals", exe + "=relative", exe + "=/x:999", "/does/not/exist=/x"} {
		if _, err := parseFile(arg); err == nil {
			t.Errorf("parseFile(%q): want an error", arg)
		}
	}
	for _, arg := range []string{"relative", "/x:abc"} {
		if _, err := parseDir(arg); err == nil {
			t.Errorf("parseDir(%q): want an error", arg)
		}
	}
	if _, err := plan([]entry{{path: "/a", mode: 0o644, src: exe}, {path: "/a/b", mode: 0o644, src: exe}}); err == nil {
		t.Error("plan with a file used as a directory: want an error")
	}
}

func TestImageIsDeterministic(t *testing.T) {
	exe := writeTemp(t, "smoke", 0o755, "binary")
	out := t.TempDir()
	args := []string{"-name", "toolgate.local/smoke:dev", "-entrypoint", "/smoke result", "-user", "65532:65532",
		"-file", exe + "=/smoke"}
	var digests []string
	for _, f := range []string{"a.tar", "b.tar"} {
		o, err := parseArgs(append(args, "-out", filepath.Join(out, f)), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		h, err := pack(o)
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, h.String())
	}
	if digests[0] != digests[1] {
		t.Errorf("digests differ: %v", digests)
	}
	a, _ := os.ReadFile(filepath.Join(out, "a.tar"))
	b, _ := os.ReadFile(filepath.Join(out, "b.tar"))
	if !bytes.Equal(a, b) {
		t.Error("tarballs differ byte for byte")
	}

	o, err := parseArgs(append(args, "-out", filepath.Join(out, "c.tar")), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	img, err := buildImage(o)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/smoke", "result"}, cf.Config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	if cf.Config.User != "65532:65532" || cf.OS != "linux" || cf.Architecture == "" || len(cf.RootFS.DiffIDs) != 1 {
		t.Errorf("config: user %q os %q arch %q diffIDs %d", cf.Config.User, cf.OS, cf.Architecture, len(cf.RootFS.DiffIDs))
	}
}
