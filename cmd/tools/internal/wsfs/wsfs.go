// Package wsfs is the file access of the workspace tools (read_file, write_file,
// edit_file, list, grep): every path is resolved inside one root folder through os.Root,
// which opens each component beneath the root (openat, no symbolic link followed out of
// it), so a path that climbs out with "..", names an absolute place elsewhere, or passes
// through a symbolic link pointing outside is refused — also when the link is swapped in
// between a check and the use (there is no separate check).
package wsfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// RootEnv names the folder the tools work in; unset, the session workspace (/workspace).
// The namespace layer's read_file example sets it to the image's read-only /samples.
const RootEnv = "TOOLS_ROOT"

// MaxFileBytes bounds a file the tools read whole (edit_file, grep).
const MaxFileBytes = 8 << 20

// ErrEscape is the error of a path that leads outside the root.
var ErrEscape = errors.New("leads outside the workspace")

// Root is an open root folder.
type Root struct {
	root *os.Root
	// Base is the folder as callers name it ("/workspace"): absolute paths under it are
	// taken, and results show paths under it.
	Base string
}

// RootPath is the folder the tools work in: $TOOLS_ROOT, else /workspace.
func RootPath() string {
	if r := os.Getenv(RootEnv); r != "" {
		return r
	}
	return podcontract.WorkspaceMountPath
}

// Open opens the root folder base.
func Open(base string) (*Root, error) {
	r, err := os.OpenRoot(base)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is not mounted: the tool runs without its session workspace", base)
		}
		return nil, fmt.Errorf("opening %s: %w", base, err)
	}
	return &Root{root: r, Base: filepath.Clean(base)}, nil
}

// Close releases the root.
func (r *Root) Close() error { return r.root.Close() }

// FS is the root as an fs.FS (for walks and globs), confined like every other access.
func (r *Root) FS() fs.FS { return r.root.FS() }

// Rel maps a requested path to a path relative to the root: "" and "." are the root
// itself, a relative path is taken from the root, an absolute one must lie under Base.
// A path that climbs out lexically is refused here; symbolic links are the os.Root's.
func (r *Root) Rel(requested string) (string, error) {
	if strings.ContainsRune(requested, 0) {
		return "", errors.New("the path contains a NUL byte")
	}
	p := requested
	if filepath.IsAbs(p) {
		clean := filepath.Clean(p)
		switch {
		case clean == r.Base:
			return ".", nil
		case strings.HasPrefix(clean, r.Base+string(filepath.Separator)):
			p = strings.TrimPrefix(clean, r.Base+string(filepath.Separator))
		default:
			return "", fmt.Errorf("%s: an absolute path outside %s", clean, r.Base)
		}
	}
	rel := filepath.Clean(p)
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s: %w", requested, ErrEscape)
	}
	return rel, nil
}

// Show is how results name a path relative to the root.
func (r *Root) Show(rel string) string {
	if rel == "." || rel == "" {
		return r.Base
	}
	return filepath.Join(r.Base, rel)
}

// explain turns os.Root's errors into sentences for the model.
func (r *Root) explain(rel string, err error) error {
	var pe *fs.PathError
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "path escapes from parent"):
		return fmt.Errorf("%s: %w (a symbolic link or \"..\" points out of it)", r.Show(rel), ErrEscape)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file or folder", r.Show(rel))
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("%s: read-only file system (the tool mounts the workspace ReadOnly)", r.Show(rel))
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied (a ReadOnly workspace cannot be written)", r.Show(rel))
	case errors.As(err, &pe):
		return fmt.Errorf("%s: %s", r.Show(rel), pe.Err.Error())
	}
	return fmt.Errorf("%s: %w", r.Show(rel), err)
}

// Stat describes rel (following a symbolic link inside the root).
func (r *Root) Stat(rel string) (fs.FileInfo, error) {
	info, err := r.root.Stat(rel)
	return info, r.explain(rel, err)
}

// ReadDir lists the folder rel.
func (r *Root) ReadDir(rel string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(r.root.FS(), fsName(rel))
	return entries, r.explain(rel, err)
}

// ReadText reads up to limit bytes of the regular text file rel; truncated says more was
// there (cut at a character boundary).
func (r *Root) ReadText(rel string, limit int64) (data []byte, size int64, truncated bool, err error) {
	f, err := r.root.Open(rel)
	if err != nil {
		return nil, 0, false, r.explain(rel, err)
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return nil, 0, false, r.explain(rel, err)
	}
	if !info.Mode().IsRegular() {
		return nil, 0, false, fmt.Errorf("%s: not a regular file", r.Show(rel))
	}
	data, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, 0, false, r.explain(rel, err)
	}
	if int64(len(data)) > limit {
		data, truncated = data[:limit], true
		for len(data) > 0 && !utf8.Valid(data) {
			data = data[:len(data)-1] // a character cut at the limit
		}
	}
	if !utf8.Valid(data) {
		return nil, 0, false, fmt.Errorf("%s: not a text file (not UTF-8)", r.Show(rel))
	}
	return data, info.Size(), truncated, nil
}

// WriteFile writes data to rel, creating its parent folders, replacing the file whole
// (its mode kept when it exists). It never writes through a symbolic link out of the root.
func (r *Root) WriteFile(rel string, data []byte) error {
	if rel == "." {
		return fmt.Errorf("%s: is the workspace folder, not a file", r.Show(rel))
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := r.root.MkdirAll(dir, 0o755); err != nil {
			return r.explain(dir, err)
		}
	}
	mode := fs.FileMode(0o644)
	if info, err := r.root.Lstat(rel); err == nil {
		if info.IsDir() {
			return fmt.Errorf("%s: is a folder", r.Show(rel))
		}
		mode = info.Mode().Perm()
	}
	return r.explain(rel, r.root.WriteFile(rel, data, mode))
}

// fsName is rel as fs.FS names it.
func fsName(rel string) string {
	if rel == "" {
		return "."
	}
	return filepath.ToSlash(rel)
}

// Walk visits rel and, when it is a folder, everything beneath it (symbolic links are
// reported, never followed), stopping after limit entries (truncated).
func (r *Root) Walk(rel string, limit int, visit func(rel string, d fs.DirEntry) error) (truncated bool, err error) {
	n := 0
	stop := errors.New("stop")
	err = fs.WalkDir(r.root.FS(), fsName(rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return r.explain(filepath.FromSlash(p), err)
		}
		if n >= limit {
			truncated = true
			return stop
		}
		n++
		return visit(filepath.FromSlash(p), d)
	})
	if errors.Is(err, stop) {
		err = nil
	}
	return truncated, err
}
