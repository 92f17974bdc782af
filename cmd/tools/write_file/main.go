// Command write_file writes {"path", "content"} into the session workspace (/workspace),
// creating the parent folders and replacing the file whole. Paths that lead outside the
// workspace are refused (internal/wsfs); on a ReadOnly mount every write is refused.
package main

import (
	"errors"

	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
	"github.com/toolgate/toolgate/cmd/tools/internal/wsfs"
)

type args struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

type result struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
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
	return write(root, a)
}

func write(root *wsfs.Root, a args) (any, error) {
	if a.Path == "" {
		return nil, errors.New("path is empty")
	}
	if a.Content == nil {
		return nil, errors.New("content is missing (an empty file is \"content\": \"\")")
	}
	rel, err := root.Rel(a.Path)
	if err != nil {
		return nil, err
	}
	if err := root.WriteFile(rel, []byte(*a.Content)); err != nil {
		return nil, err
	}
	return result{Path: root.Show(rel), Bytes: len(*a.Content)}, nil
}
