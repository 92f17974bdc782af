// Command docslinks reports relative Markdown links that dangle: a file that does not exist,
// or an anchor (#…) that no heading of the target page produces (GitHub's rule: lower case,
// punctuation dropped, spaces to hyphens, -1, -2 … for repeats). hack/check-docs.sh runs it
// from the repository root over README.md, the chart's README and docs/.
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`^#{1,6} (.*)$`)
	fenceRE   = regexp.MustCompile("^\\s*(```|~~~)")
	codeRE    = regexp.MustCompile("`[^`]*`")
)

// lines returns the lines of a Markdown file outside fenced code blocks.
func lines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []string
	fence := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if fenceRE.MatchString(l) {
			fence = !fence
			continue
		}
		if !fence {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var anchorCache = map[string]map[string]bool{}

func anchors(path string) (map[string]bool, error) {
	if a, ok := anchorCache[path]; ok {
		return a, nil
	}
	ls, err := lines(path)
	if err != nil {
		return nil, err
	}
	a, seen := map[string]bool{}, map[string]int{}
	for _, l := range ls {
		if m := headingRE.FindStringSubmatch(l); m != nil {
			s := slug(m[1])
			if n := seen[s]; n > 0 {
				a[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				a[s] = true
			}
			seen[s]++
		}
	}
	anchorCache[path] = a
	return a, nil
}

func check(path string) (bad []string) {
	ls, err := lines(path)
	if err != nil {
		return []string{err.Error()}
	}
	for _, l := range ls {
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(l, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			resolved := path
			if file != "" {
				resolved = filepath.Join(filepath.Dir(path), file)
				if _, err := os.Stat(resolved); err != nil {
					bad = append(bad, fmt.Sprintf("%s: %s: no such file", path, target))
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			a, err := anchors(resolved)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: %s: %v", path, target, err))
			} else if !a[anchor] {
				bad = append(bad, fmt.Sprintf("%s: %s: no such heading", path, target))
			}
		}
	}
	return bad
}

func main() {
	files := []string{"README.md", "charts/toolgate/README.md"}
	_ = filepath.WalkDir("docs", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	var bad []string
	for _, f := range files {
		bad = append(bad, check(f)...)
	}
	for _, b := range bad {
		fmt.Println("dangling link:", b)
	}
	if len(bad) > 0 {
		os.Exit(1)
	}
}
