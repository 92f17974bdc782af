// Command edit_file replaces one exact string in a text file of the session workspace
// (/workspace): {"path", "old_string", "new_string"}. The old string must occur exactly
// once: absent or found more than once, nothing is written and the error says which
// (give more surrounding text to make it unique). Paths that lead outside the workspace
// are refused (internal/wsfs).
package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
	"github.com/toolgate/toolgate/cmd/tools/internal/wsfs"
)

type args struct {
	Path      string `json:"path"`
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
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
	return edit(root, a)
}

func edit(root *wsfs.Root, a args) (any, error) {
	if a.OldString == "" {
		return nil, errors.New("old_string is empty: it must be the exact text to replace")
	}
	if a.OldString == a.NewString {
		return nil, errors.New("old_string and new_string are the same: nothing to change")
	}
	rel, err := root.Rel(a.Path)
	if err != nil {
		return nil, err
	}
	data, _, truncated, err := root.ReadText(rel, wsfs.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	if truncated {
		return nil, fmt.Errorf("%s: larger than %d bytes, not edited", root.Show(rel), wsfs.MaxFileBytes)
	}
	text := string(data)
	switch n := strings.Count(text, a.OldString); n {
	case 0:
		return nil, fmt.Errorf("%s: old_string not found; nothing was changed", root.Show(rel))
	case 1:
	default:
		return nil, fmt.Errorf("%s: old_string occurs %d times; give more surrounding text so that it is unique; nothing was changed", root.Show(rel), n)
	}
	out := strings.Replace(text, a.OldString, a.NewString, 1)
	if err := root.WriteFile(rel, []byte(out)); err != nil {
		return nil, err
	}
	return result{Path: root.Show(rel), Bytes: len(out)}, nil
}
