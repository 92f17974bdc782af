// Command grep searches the text files of the session workspace (/workspace) for a
// regular expression (Go RE2 syntax): {"pattern", "path", "glob", "ignoreCase",
// "maxMatches"}. It returns file:line matches, at most maxMatches (default 200, at most
// 2000); binary files and files over 8 MiB are skipped, symbolic links never followed,
// and paths that lead outside the workspace are refused (internal/wsfs).
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/cmd/tools/internal/toolio"
	"github.com/toolgate/toolgate/cmd/tools/internal/wsfs"
)

const (
	defaultMatches = 200
	maxMatches     = 2000
	maxWalk        = 20000
	maxLine        = 512
)

type args struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	IgnoreCase bool   `json:"ignoreCase"`
	MaxMatches int    `json:"maxMatches"`
}

type match struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

type result struct {
	Matches   []match `json:"matches"`
	Files     int     `json:"filesSearched"`
	Truncated bool    `json:"truncated,omitempty"`
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
	return grep(root, a)
}

func grep(root *wsfs.Root, a args) (any, error) {
	if a.Pattern == "" {
		return nil, errors.New("pattern is empty")
	}
	expr := a.Pattern
	if a.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("pattern: %w", err)
	}
	if a.Glob != "" {
		if _, err := path.Match(a.Glob, "x"); err != nil {
			return nil, fmt.Errorf("glob %q: %w", a.Glob, err)
		}
	}
	limit := a.MaxMatches
	if limit <= 0 {
		limit = defaultMatches
	}
	limit = min(limit, maxMatches)
	rel, err := root.Rel(a.Path)
	if err != nil {
		return nil, err
	}
	res := result{Matches: []match{}}
	walkCut, err := root.Walk(rel, maxWalk, func(p string, d fs.DirEntry) error {
		if !d.Type().IsRegular() || res.Truncated {
			return nil
		}
		if a.Glob != "" {
			if ok, _ := path.Match(a.Glob, d.Name()); !ok {
				return nil
			}
		}
		data, _, cut, err := root.ReadText(p, wsfs.MaxFileBytes)
		if err != nil || cut {
			return nil // binary, too large or gone: not searched
		}
		res.Files++
		res.Truncated = search(re, root.Show(p), data, limit, &res.Matches)
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Truncated = res.Truncated || walkCut
	return res, nil
}

// search appends data's matching lines to out; true when it stopped at limit.
func search(re *regexp.Regexp, shown string, data []byte, limit int, out *[]match) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), wsfs.MaxFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if !re.Match(line) {
			continue
		}
		if len(*out) >= limit {
			return true
		}
		*out = append(*out, match{Path: shown, Line: n, Text: cut(string(line))})
	}
	return false
}

func cut(s string) string {
	s = strings.TrimRight(s, "\r")
	if len(s) <= maxLine {
		return s
	}
	s = s[:maxLine]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
