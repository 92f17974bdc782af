// Command list lists the session workspace (/workspace): {"path", "pattern", "recursive"}.
// Without a pattern it lists the folder path (recursive: everything beneath it); with a
// glob pattern ("*.go", "src/**/*.md": ** matches any number of folders) only the files
// whose path relative to path matches. Symbolic links are listed, never followed; paths
// that lead outside the workspace are refused (internal/wsfs). At most 2000 entries.
package main

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
	"github.com/toolgate/toolgate/cmd/tools/internal/wsfs"
)

const maxEntries = 2000

type args struct {
	Path      string `json:"path"`
	Pattern   string `json:"pattern"`
	Recursive bool   `json:"recursive"`
}

type result struct {
	Path      string   `json:"path"`
	Entries   []string `json:"entries"`
	Truncated bool     `json:"truncated,omitempty"`
}

func main() { toolio.Main(run) }

func run(raw []byte) (any, error) {
	var a args
	if err := toolio.Decode(raw, &a); err != nil {
		return nil, err
	}
	root, err := wsfs.Open(wsfs.RootPath())
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }()
	return list(root, a)
}

func list(root *wsfs.Root, a args) (any, error) {
	rel, err := root.Rel(a.Path)
	if err != nil {
		return nil, err
	}
	if a.Pattern != "" {
		if _, err := matchGlob(a.Pattern, "x"); err != nil {
			return nil, fmt.Errorf("pattern %q: %w", a.Pattern, err)
		}
	}
	res := result{Path: root.Show(rel), Entries: []string{}}
	deep := a.Recursive || a.Pattern != ""
	res.Truncated, err = root.Walk(rel, maxEntries, func(p string, d fs.DirEntry) error {
		if p == rel {
			return nil
		}
		under, _ := filepath.Rel(rel, p)
		under = filepath.ToSlash(under)
		name := under
		if d.IsDir() {
			name += "/"
		}
		if a.Pattern != "" {
			if ok, _ := matchGlob(a.Pattern, under); !ok {
				return nil
			}
		}
		res.Entries = append(res.Entries, name)
		if d.IsDir() && !deep {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// matchGlob matches a slash-separated path against a glob whose "**" element matches any
// number of path elements (path.Match for the rest).
func matchGlob(pattern, name string) (bool, error) {
	return matchParts(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchParts(pat, name []string) (bool, error) {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if ok, err := matchParts(pat[1:], name[i:]); ok || err != nil {
					return ok, err
				}
			}
			return false, nil
		}
		if len(name) == 0 {
			return false, nil
		}
		ok, err := path.Match(pat[0], name[0])
		if !ok || err != nil {
			return false, err
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0, nil
}
