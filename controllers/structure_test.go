package controllers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bounds of issue 35: no non-test file under controllers/ longer than maxFileLines, no type
// declaring more than maxTypeMethods methods (promoted ones are not declared, so a type
// cannot get under the bound by embedding: collaborators are named fields).
const (
	maxFileLines   = 400
	maxTypeMethods = 25
)

// TestStructureBounds parses every non-test Go file under controllers/ (this directory and
// its packages) and fails on a file over maxFileLines lines or a type with more than
// maxTypeMethods methods.
func TestStructureBounds(t *testing.T) {
	methods := map[string]int{} // package path + "." + type name
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := strings.Count(string(src), "\n"); n > maxFileLines {
			t.Errorf("controllers/%s has %d lines, more than %d", path, n, maxFileLines)
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv != nil && len(fn.Recv.List) == 1 {
				methods[filepath.ToSlash(filepath.Join("controllers", filepath.Dir(path)))+"."+receiverType(fn.Recv.List[0].Type)]++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(methods) == 0 {
		t.Fatal("no methods found: the walk read nothing")
	}
	for typ, n := range methods {
		if n > maxTypeMethods {
			t.Errorf("type %s declares %d methods, more than %d", typ, n, maxTypeMethods)
		}
	}
}

// receiverType is the name of a method's receiver type: T of T, *T, T[P] or *T[P].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return "?"
		}
	}
}
