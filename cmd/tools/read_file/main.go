// Command read_file reads a text file — or lists a folder — under the sample root
// (/samples, baked into the tools image read-only). Paths are taken relative to the root;
// anything that resolves outside it, symbolic links included, is refused.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
)

const (
	defaultMaxBytes = 64 << 10
	maxMaxBytes     = 1 << 20
)

type args struct {
	Path     string `json:"path"`
	MaxBytes int    `json:"maxBytes"`
}

type fileResult struct {
	Path      string   `json:"path"`
	Size      int64    `json:"size"`
	Content   string   `json:"content,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
	Entries   []string `json:"entries,omitempty"`
}

func main() { toolio.Main(run) }

func root() string {
	if r := os.Getenv("SAMPLES_ROOT"); r != "" {
		return r
	}
	return "/samples"
}

func run(raw []byte) (any, error) {
	var a args
	if err := toolio.Decode(raw, &a); err != nil {
		return nil, err
	}
	if a.MaxBytes <= 0 {
		a.MaxBytes = defaultMaxBytes
	}
	a.MaxBytes = min(a.MaxBytes, maxMaxBytes)
	return read(root(), a.Path, a.MaxBytes)
}

// resolve maps a requested path to a real path inside base, or fails.
func resolve(base, requested string) (string, string, error) {
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return "", "", fmt.Errorf("the sample folder is missing: %w", err)
	}
	rel := requested
	if filepath.IsAbs(requested) {
		cleaned := filepath.Clean(requested)
		if cleaned != base && !strings.HasPrefix(cleaned, base+string(filepath.Separator)) {
			return "", "", fmt.Errorf("%s: outside %s", cleaned, base)
		}
		rel = strings.TrimPrefix(cleaned, base)
	}
	clean := filepath.Join("/", rel) // "/.." cleans to "/": no climbing out lexically
	shown := filepath.Join(base, clean)
	real, err := filepath.EvalSymlinks(filepath.Join(realBase, clean))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", "", fmt.Errorf("%s: no such file", shown)
		}
		return "", "", fmt.Errorf("%s: %w", shown, err)
	}
	if real != realBase && !strings.HasPrefix(real, realBase+string(filepath.Separator)) {
		return "", "", fmt.Errorf("%s: outside %s", shown, base)
	}
	return real, shown, nil
}

func read(base, requested string, maxBytes int) (any, error) {
	real, shown, err := resolve(base, requested)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		entries, err := os.ReadDir(real)
		if err != nil {
			return nil, err
		}
		res := fileResult{Path: shown, Entries: []string{}}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() {
				name += "/"
			}
			res.Entries = append(res.Entries, name)
		}
		sort.Strings(res.Entries)
		return res, nil
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", shown)
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, int64(maxBytes)))
	if err != nil {
		return nil, err
	}
	truncated := info.Size() > int64(len(data))
	if truncated {
		for len(data) > 0 && !utf8.Valid(data) {
			data = data[:len(data)-1] // a character cut at the limit
		}
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s: not a text file", shown)
	}
	return fileResult{Path: shown, Size: info.Size(), Content: string(data), Truncated: truncated}, nil
}
