package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// entry is one file or directory of the image's single layer.
type entry struct {
	// path inside the image, absolute, cleaned ("/toolgate/runner").
	path string
	// mode holds the permission bits (and sticky bit) only.
	mode int64
	// src is the file on the host to copy; empty for a directory.
	src string
}

func (e entry) isDir() bool { return e.src == "" }

// defaultDirs exist in every image: many programs expect /tmp and /dev, and the kubelet
// bind-mounts /etc/hosts, /etc/resolv.conf and /dev/termination-log over them.
var defaultDirs = []entry{
	{path: "/dev", mode: 0o755},
	{path: "/etc", mode: 0o755},
	{path: "/tmp", mode: 0o1777},
}

// parseFile reads a -file argument "SRC=DST" or "SRC=DST:MODE" (octal mode). Without a
// mode the file is 0755 if the source has any execute bit, else 0644, so the result does
// not depend on the host's umask.
func parseFile(arg string) (entry, error) {
	src, dst, ok := strings.Cut(arg, "=")
	if !ok || src == "" || dst == "" {
		return entry{}, fmt.Errorf("-file %q: want SRC=DST[:MODE]", arg)
	}
	var mode int64 = -1
	if d, m, hasMode := strings.Cut(dst, ":"); hasMode {
		parsed, err := strconv.ParseInt(m, 8, 32)
		if err != nil || parsed&^0o7777 != 0 {
			return entry{}, fmt.Errorf("-file %q: bad octal mode %q", arg, m)
		}
		dst, mode = d, parsed
	}
	if !path.IsAbs(dst) {
		return entry{}, fmt.Errorf("-file %q: destination must be absolute", arg)
	}
	if mode < 0 {
		fi, err := os.Stat(src)
		if err != nil {
			return entry{}, err
		}
		if !fi.Mode().IsRegular() {
			return entry{}, fmt.Errorf("-file %q: %s is not a regular file", arg, src)
		}
		mode = 0o644
		if fi.Mode().Perm()&0o111 != 0 {
			mode = 0o755
		}
	}
	return entry{path: path.Clean(dst), mode: mode, src: src}, nil
}

// parseDir reads a -dir argument "PATH" or "PATH:MODE".
func parseDir(arg string) (entry, error) {
	p, m, hasMode := strings.Cut(arg, ":")
	if !path.IsAbs(p) {
		return entry{}, fmt.Errorf("-dir %q: path must be absolute", arg)
	}
	var mode int64 = 0o755
	if hasMode {
		parsed, err := strconv.ParseInt(m, 8, 32)
		if err != nil || parsed&^0o7777 != 0 {
			return entry{}, fmt.Errorf("-dir %q: bad octal mode %q", arg, m)
		}
		mode = parsed
	}
	return entry{path: path.Clean(p), mode: mode}, nil
}

// plan merges the default dirs, the requested entries and every missing parent directory
// (0755) into one list sorted by path, so that parents come before their children and the
// same inputs always give the same tar. Later entries win over earlier ones for one path.
func plan(entries []entry) ([]entry, error) {
	byPath := map[string]entry{}
	for _, e := range append(append([]entry{}, defaultDirs...), entries...) {
		if e.path == "/" {
			return nil, fmt.Errorf("cannot add / itself")
		}
		if prev, ok := byPath[e.path]; ok && prev.isDir() != e.isDir() {
			return nil, fmt.Errorf("%s is both a file and a directory", e.path)
		}
		byPath[e.path] = e
	}
	for p, e := range byPath {
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			parent, ok := byPath[dir]
			if !ok {
				byPath[dir] = entry{path: dir, mode: 0o755}
				continue
			}
			if !parent.isDir() {
				return nil, fmt.Errorf("%s needs %s to be a directory, but it is a file", e.path, dir)
			}
		}
	}
	out := make([]entry, 0, len(byPath))
	for _, e := range byPath {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// writeLayer writes the planned entries as an uncompressed tar, owned by root, with the
// fixed modification time mtime.
func writeLayer(w io.Writer, entries []entry, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(e.path, "/"),
			Mode:    e.mode,
			ModTime: mtime,
		}
		if e.isDir() {
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		data, err := os.ReadFile(e.src)
		if err != nil {
			return err
		}
		hdr.Typeflag = tar.TypeReg
		hdr.Size = int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// layerBytes plans and writes the layer into memory (our binaries are tens of MB at most).
func layerBytes(entries []entry, mtime time.Time) ([]byte, error) {
	planned, err := plan(entries)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeLayer(&buf, planned, mtime); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
