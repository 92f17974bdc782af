package toolgatetest_test

import (
	"fmt"
	"go/types"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const module = "github.com/toolgate/toolgate"

// The kit is public API (DESIGN.md): a team outside this module uses it without naming
// anything but the kit's own types, api/, pkg/ and third-party packages. So no exported
// function, field, method, type, var or const of the kit — nor anything it reaches through
// the module's pkg/ and api/ types — may name a type of github.com/toolgate/toolgate/internal/...
// (Go forbids them to import it) or of controllers (the operator's insides, free to change),
// not even behind an alias (the name would still be theirs in docs and errors).
func TestExportedAPINamesNoInternalType(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the kit and its dependencies")
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedTypes}, module+"/pkg/toolgatetest")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 || len(pkgs) != 1 {
		t.Fatal("the kit did not load")
	}
	w := &apiWalker{seen: map[types.Type]bool{}}
	scope := pkgs[0].Types.Scope()
	for _, name := range scope.Names() {
		if obj := scope.Lookup(name); obj.Exported() {
			w.object("toolgatetest."+name, obj)
		}
	}
	if len(w.found) == 0 && len(w.seen) < 10 {
		t.Fatalf("walked only %d types: the walk is broken", len(w.seen))
	}
	sort.Strings(w.found)
	for _, f := range w.found {
		t.Error(f)
	}
}

// apiWalker visits every type an exported declaration names, and through the module's own
// public packages (api/, pkg/) their exported fields and methods too: what a user of the
// declaration can reach and must be able to name.
type apiWalker struct {
	seen  map[types.Type]bool
	found []string
}

func (w *apiWalker) object(where string, obj types.Object) {
	if obj == nil {
		w.found = append(w.found, where+": not declared")
		return
	}
	if tn, ok := obj.(*types.TypeName); ok && !tn.IsAlias() {
		w.named(where, obj.Type().(*types.Named))
		return
	}
	w.typ(where, obj.Type())
}

func (w *apiWalker) typ(where string, t types.Type) {
	switch t := t.(type) { // every place that names an internal type is reported
	case *types.Alias:
		w.check(where, t.Obj())
	case *types.Named:
		w.check(where, t.Obj())
	}
	if w.seen[t] {
		return
	}
	w.seen[t] = true
	switch t := t.(type) {
	case *types.Alias:
		w.typ(where, types.Unalias(t))
	case *types.Named:
		for i := range t.TypeArgs().Len() {
			w.typ(where, t.TypeArgs().At(i))
		}
		if p := t.Obj().Pkg(); p != nil && strings.HasPrefix(p.Path(), module+"/") && !forbidden(p.Path()) {
			w.named(p.Name()+"."+t.Obj().Name(), t)
		}
	case *types.Pointer:
		w.typ(where, t.Elem())
	case *types.Slice:
		w.typ(where, t.Elem())
	case *types.Array:
		w.typ(where, t.Elem())
	case *types.Chan:
		w.typ(where, t.Elem())
	case *types.Map:
		w.typ(where, t.Key())
		w.typ(where, t.Elem())
	case *types.Signature:
		for _, tuple := range []*types.Tuple{t.Params(), t.Results()} {
			for i := range tuple.Len() {
				w.typ(where, tuple.At(i).Type())
			}
		}
	case *types.Struct:
		for i := range t.NumFields() {
			if f := t.Field(i); f.Exported() {
				w.typ(where+"."+f.Name(), f.Type())
			}
		}
	case *types.Interface:
		for i := range t.NumMethods() {
			if m := t.Method(i); m.Exported() {
				w.typ(where+"."+m.Name(), m.Type())
			}
		}
	}
}

// named walks a public type of the module: its structure and its exported methods.
func (w *apiWalker) named(where string, t *types.Named) {
	w.seen[t] = true
	w.typ(where, t.Underlying())
	for i := range t.NumMethods() {
		if m := t.Method(i); m.Exported() {
			w.typ(where+"."+m.Name(), m.Type())
		}
	}
}

func (w *apiWalker) check(where string, obj *types.TypeName) {
	if p := obj.Pkg(); p != nil && forbidden(p.Path()) {
		w.found = append(w.found, fmt.Sprintf("%s names %s.%s", where, p.Path(), obj.Name()))
	}
}

// forbidden says whether the kit's API may not name a type of the package at path.
func forbidden(path string) bool {
	return strings.Contains(path+"/", "/internal/") || path == module+"/controllers" ||
		strings.HasPrefix(path, module+"/controllers/")
}
