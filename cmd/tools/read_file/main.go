// Command read_file reads a text file — or lists a folder — in the session workspace
// (/workspace; the namespace layer's example sets TOOLS_ROOT=/samples, the image's
// read-only sample files). Paths are relative to the root, or absolute under it; anything
// that leads outside it ("..", another absolute path, a symbolic link pointing out) is
// refused (internal/wsfs).
package main

import (
	"sort"

	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
	"github.com/toolgate/toolgate/cmd/tools/internal/wsfs"
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

func run(raw []byte) (any, error) {
	var a args
	if err := toolio.Decode(raw, &a); err != nil {
		return nil, err
	}
	if a.MaxBytes <= 0 {
		a.MaxBytes = defaultMaxBytes
	}
	a.MaxBytes = min(a.MaxBytes, maxMaxBytes)
	root, err := wsfs.Open(wsfs.RootPath())
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }()
	return read(root, a.Path, a.MaxBytes)
}

func read(root *wsfs.Root, requested string, maxBytes int) (any, error) {
	rel, err := root.Rel(requested)
	if err != nil {
		return nil, err
	}
	info, err := root.Stat(rel)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		entries, err := root.ReadDir(rel)
		if err != nil {
			return nil, err
		}
		res := fileResult{Path: root.Show(rel), Entries: []string{}}
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
	data, size, truncated, err := root.ReadText(rel, int64(maxBytes))
	if err != nil {
		return nil, err
	}
	return fileResult{Path: root.Show(rel), Size: size, Content: string(data), Truncated: truncated}, nil
}
