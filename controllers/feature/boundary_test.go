package feature_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// featurePackages are the features' own packages: only they (and controllers/feature/all,
// which lists them) name a feature's code.
var featurePackages = []string{
	"github.com/toolgate/toolgate/controllers/workspace",
	"github.com/toolgate/toolgate/controllers/egressgrant",
	"github.com/toolgate/toolgate/controllers/credentials",
	"github.com/toolgate/toolgate/controllers/runtimeclass",
}

// featureWords are what a feature check outside a feature's package is spelled with: a
// field, method, function, type or variable about a workspace, credentials, egress or a
// runtime class (RuntimeClassGuard, Workspaces.For, EgressProxyURL, credentialMissing).
var featureWords = regexp.MustCompile(`(?i)workspace|credential|egress|runtimeclass`)

// TestFeatureChecksStayInTheirPackages keeps the reconciler and the executors free of
// feature checks: their non-test files import no feature's package and spell no
// identifier about one; they call the features through feature.List. The one exception is
// a feature's name from package feature (feature.Workspace, ...), which is how an executor
// says what it supports.
func TestFeatureChecksStayInTheirPackages(t *testing.T) {
	found := featureChecks(t, filepath.Join("..", ".."), "controllers/toolcall", "controllers/executor")
	for _, f := range found {
		t.Error(f)
	}
}

// featureChecks are the feature checks in the non-test Go files under dirs (relative to
// root, the module's root).
func featureChecks(t *testing.T, root string, dirs ...string) []string {
	t.Helper()
	var found []string
	seen := 0
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			seen++
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			found = append(found, checksIn(t, rel, src)...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen < 20 {
		t.Fatalf("read only %d files under %v", seen, dirs)
	}
	sort.Strings(found)
	return found
}

func checksIn(t *testing.T, rel string, src []byte) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parsing %s: %v", rel, err)
	}
	var found []string
	at := func(n ast.Node) string { return rel + ":" + strconv.Itoa(fset.Position(n.Pos()).Line) }
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		for _, p := range featurePackages {
			if path == p || strings.HasPrefix(path, p+"/") {
				found = append(found, at(imp)+": imports the feature package "+path)
			}
		}
	}
	// A feature's name from package feature: the selector's Sel is not a check.
	named := map[*ast.Ident]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "feature" {
				named[sel.Sel] = true
			}
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.Ident:
			if featureWords.MatchString(n.Name) && !named[n] {
				found = append(found, at(n)+": "+n.Name)
			}
		}
		return true
	})
	return found
}
