// Command installdiff compares two renderings of the toolgate install — `helm template`
// of charts/toolgate and `kubectl kustomize config/default` — object by object, so that
// the two install paths cannot drift apart:
//
//	installdiff -ignore-kind Namespace chart.yaml kustomize.yaml
//
// Objects are matched by apiVersion, kind, namespace and name. metadata.labels are not
// compared (Helm adds its own: helm.sh/chart, app.kubernetes.io/managed-by=Helm…);
// everything else is, after both sides are read as JSON (so YAML styles do not matter).
// Exits 1 with a diff of each object that differs or exists on one side only.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var ignoreKinds listFlag
	flag.Var(&ignoreKinds, "ignore-kind", "kind to leave out on both sides (repeatable)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: installdiff [-ignore-kind KIND]... A.yaml B.yaml")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	a, err := readFile(flag.Arg(0), ignoreKinds)
	if err == nil {
		var b map[string]map[string]any
		if b, err = readFile(flag.Arg(1), ignoreKinds); err == nil {
			diffs := compare(a, b, flag.Arg(0), flag.Arg(1))
			for _, d := range diffs {
				fmt.Println(d)
			}
			if len(diffs) > 0 {
				fmt.Printf("installdiff: %d object(s) differ between %s and %s\n", len(diffs), flag.Arg(0), flag.Arg(1))
				os.Exit(1)
			}
			fmt.Printf("installdiff: %s and %s describe the same %d objects\n", flag.Arg(0), flag.Arg(1), len(a))
			return
		}
	}
	fmt.Fprintln(os.Stderr, "installdiff:", err)
	os.Exit(2)
}

func readFile(path string, ignoreKinds []string) (map[string]map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return read(f, ignoreKinds)
}

var separator = regexp.MustCompile(`(?m)^---\s*$`)

// read parses a multi-document YAML stream into objects keyed by identity.
func read(r io.Reader, ignoreKinds []string) (map[string]map[string]any, error) {
	data, err := io.ReadAll(bufio.NewReader(r))
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]any{}
	for i, doc := range separator.Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if obj == nil {
			continue
		}
		kind, _ := obj["kind"].(string)
		if kind == "" {
			return nil, fmt.Errorf("document %d has no kind", i+1)
		}
		if contains(ignoreKinds, kind) {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		if meta != nil {
			delete(meta, "labels")
			if len(meta) == 0 {
				delete(obj, "metadata")
			}
		}
		k := key(obj, meta)
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s appears twice", k)
		}
		out[k] = obj
	}
	return out, nil
}

func stripComments(doc string) string {
	var b bytes.Buffer
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func key(obj, meta map[string]any) string {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	name, _ := meta["name"].(string)
	if ns, _ := meta["namespace"].(string); ns != "" {
		return fmt.Sprintf("%s %s %s/%s", apiVersion, kind, ns, name)
	}
	return fmt.Sprintf("%s %s %s", apiVersion, kind, name)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// compare returns one message per object that differs or is missing on one side.
func compare(a, b map[string]map[string]any, nameA, nameB string) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var diffs []string
	for _, k := range sorted {
		oa, inA := a[k]
		ob, inB := b[k]
		switch {
		case !inA:
			diffs = append(diffs, fmt.Sprintf("only in %s: %s", nameB, k))
		case !inB:
			diffs = append(diffs, fmt.Sprintf("only in %s: %s", nameA, k))
		default:
			if d := cmp.Diff(oa, ob); d != "" {
				diffs = append(diffs, fmt.Sprintf("%s differs (-%s +%s):\n%s", k, nameA, nameB, d))
			}
		}
	}
	return diffs
}
