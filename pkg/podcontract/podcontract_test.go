package podcontract_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// common are contract values that are ordinary words elsewhere ("tool" is also a JSON key,
// "-" a flag's stdin), or names another standard defines and other programs read too (W3C
// Trace Context's TRACEPARENT, OpenTelemetry's OTEL_*, the kubelet's termination message
// path): they are not checked, and nothing may be added here lightly.
var common = map[string]bool{
	"tool": true, "tmp": true, "/tmp": true, "-": true, "1": true,
	"toolgate": true, "http/protobuf": true,
	"TRACEPARENT": true, "OTEL_EXPORTER_OTLP_ENDPOINT": true, "OTEL_EXPORTER_OTLP_PROTOCOL": true,
	"/dev/termination-log": true,
	// Kubernetes' own data keys of a kubernetes.io/tls Secret (corev1.TLSCertKey,
	// TLSPrivateKeyKey), which the session TLS Secret is
	"tls.crt": true, "tls.key": true,
	// the frame key Secret's data keys: words every error message uses
	"key": true, "previous": true,
}

// networkModes are contract values that are ordinary words elsewhere (a Ginkgo label
// "egress", a test row "none", a JSON key): they are checked where they are network modes,
// LabelNetwork's values: a literal that is exactly the mode on a line that names the label
// (networkContext) or in a function about it (NetworkLabel, ToolPodSelector).
var networkModes = map[string]bool{"none": true, "egress": true}

// networkContext is what names LabelNetwork on a line or in a function's name.
var networkContext = regexp.MustCompile(`LabelNetwork|NetworkLabel|ToolPodSelector|NetworkMode`)

// sameSpelling are literals that spell a contract name but mean something else.
var sameSpelling = map[string]string{
	// an MCP result's _meta key naming the call, not a Pod label
	"internal/gateway/convert.go": "toolgate.dev/call",
	// a label the gateway sets on the calls it makes (an index to find a retry by), no Pod's
	"internal/gateway/dedupe.go": "toolgate.dev/arguments-digest",
	// the runner's log prefix, its program's name, not the init container's
	"cmd/runner/main.go": "toolgate-runner",
}

// TestNamesHaveOneHome fails when a name of the Pod contract is written as a string literal
// anywhere in the module but this package: in Go source, tests included (a test that spells
// a name itself would keep passing after the name changed).
func TestNamesHaveOneHome(t *testing.T) {
	names := contractNames(t)
	if len(names) < 20 {
		t.Fatalf("read only %d contract names from podcontract.go", len(names))
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	patterns := map[string]*regexp.Regexp{}
	for name := range names {
		// A name inside a longer name ("toolgate.dev/call" in "toolgate.dev/call-name") is
		// another name: the match must not run on into name characters.
		patterns[name] = regexp.MustCompile(`(^|[^A-Za-z0-9_./-])` + regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_./-])`)
	}
	home, _ := os.Getwd()
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "bin", ".git", ".cluster", "node_modules", "testdata", "vendor":
				return filepath.SkipDir
			}
			if path == home {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		for _, lit := range stringLiterals(t, path) {
			for name, re := range patterns {
				rel, _ := filepath.Rel(root, path)
				if networkModes[name] && (lit.value != name || !lit.network) {
					continue
				}
				if re.MatchString(lit.value) && sameSpelling[rel] != name {
					found = append(found, rel+":"+strconv.Itoa(lit.line)+": "+strconv.Quote(name))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s is spelled outside pkg/podcontract: use its constant", f)
	}
}

type literal struct {
	value string
	line  int
	// network: the literal's line or function names LabelNetwork (networkContext).
	network bool
}

func stringLiterals(t *testing.T, path string) []literal {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	var out []literal
	inNetworkFunc := func(token.Pos) bool { return false }
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && networkContext.MatchString(fd.Name.Name) {
			prev, from, to := inNetworkFunc, fd.Pos(), fd.End()
			inNetworkFunc = func(pos token.Pos) bool { return (pos >= from && pos < to) || prev(pos) }
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if imp, ok := n.(*ast.ImportSpec); ok && imp != nil {
			return false // import paths are not names
		}
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil {
				line := fset.Position(lit.Pos()).Line
				network := inNetworkFunc(lit.Pos()) || networkContext.MatchString(lines[line-1])
				out = append(out, literal{value: v, line: line, network: network})
			}
		}
		return true
	})
	return out
}

// contractNames are the string constants podcontract.go declares, but the common words.
func contractNames(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "podcontract.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && !common[s] {
						names[s] = true
					}
				}
			}
		}
	}
	return names
}
