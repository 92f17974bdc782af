package layering

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/toolgate/toolgate/"

// rule says what a package (and everything it imports, transitively) may not depend on:
// any import path with a forbidden prefix, any path in forbiddenExact, and any toolgate
// package outside allowed.
type rule struct {
	pkg       string
	why       string
	forbidden []string
	// forbiddenExact are import paths forbidden themselves, not the packages under them
	// (the controllers package, while controllers/executor is allowed).
	forbiddenExact []string
	// allowed are the toolgate packages (and those under them) its dependencies may be.
	allowed []string
}

var rules = []rule{
	{
		pkg:            "controllers/toolcall",
		why:            "the ToolCall reconciler drives the executors and the feature packages below it; only controllers' Setup wires it",
		forbiddenExact: []string{controllers},
		allowed:        []string{"controllers", "api", "internal", "pipeline", "pkg"},
	},
	{
		pkg:            "controllers/options",
		why:            "the operator-wide settings every controller package reads: no edge back to controllers",
		forbiddenExact: []string{controllers},
		allowed:        []string{"controllers", "api", "internal", "pipeline", "pkg"},
	},
	{
		pkg:       "pipeline/...",
		why:       "the pure core: no client, no cluster",
		forbidden: []string{"k8s.io/", "sigs.k8s.io/"},
		allowed:   []string{"pipeline"},
	},
	{
		pkg:       "internal/podspec",
		why:       "the Pod builder is pure: no client, no cluster, no clock",
		forbidden: []string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go", "k8s.io/utils/clock"},
		allowed:   []string{"internal/podspec", "api/v1alpha1", "pkg/podcontract", "pipeline"},
	},
	{
		pkg:            "controllers/framekeys",
		why:            "the frame key store is used by the executors and the pool reconciler: no back edge to the reconcilers",
		forbiddenExact: []string{controllers},
		allowed:        []string{"controllers", "pkg"},
	},
	{
		pkg:            "controllers/frozenargs",
		why:            "the carrier of admitted arguments is used by the executors and the reconciler: no back edge to the reconcilers",
		forbiddenExact: []string{controllers},
		allowed:        []string{"api", "pipeline", "pkg"},
	},
	{
		pkg:            "controllers/egressgrant/...",
		why:            "the per-attempt egress grant (a feature) is used by the executors and the reconciler: no back edge to them",
		forbidden:      aboveFeatures,
		forbiddenExact: []string{controllers},
		allowed:        []string{"controllers", "api", "internal", "pipeline", "pkg"},
	},
	{
		pkg:            "controllers/internal/...",
		why:            "helpers every controller package shares: no back edge to the reconcilers",
		forbiddenExact: []string{controllers},
		allowed:        []string{"pipeline", "pkg"},
	},
	{
		pkg:            "controllers/executor/...",
		why:            "the executor seam and what executors share: no back edge to the reconcilers",
		forbiddenExact: []string{controllers},
		allowed:        []string{"controllers", "api", "internal", "pipeline", "pkg"},
	},
	{
		pkg:            "controllers/netisolation",
		why:            "network isolation sits below the reconcilers: no edge back to controllers",
		forbiddenExact: []string{controllers},
		allowed:        []string{"controllers", "api", "internal", "pkg", "pipeline"},
	},
	{
		pkg:            "controllers/workspace",
		why:            "session workspaces (a feature) sit below the reconcilers and executors: no edge back to them",
		forbidden:      aboveFeatures,
		forbiddenExact: []string{controllers},
		allowed:        []string{"controllers", "api", "internal", "pkg", "pipeline"},
	},
	{
		pkg:            "controllers/feature/...",
		why:            "the feature interface and the list of features sit below the reconciler and the executors, which call them",
		forbidden:      aboveFeatures,
		forbiddenExact: []string{controllers},
		allowed:        []string{"controllers", "api", "internal", "pkg", "pipeline"},
	},
	{
		pkg:            "controllers/credentials",
		why:            "a feature: below the reconciler and the executors",
		forbidden:      aboveFeatures,
		forbiddenExact: []string{controllers},
		allowed:        []string{"controllers/credentials", "controllers/feature", "controllers/executor", "controllers/internal", "api", "internal", "pkg", "pipeline"},
	},
	{
		pkg:            "controllers/runtimeclass",
		why:            "a feature: below the reconciler and the executors",
		forbidden:      aboveFeatures,
		forbiddenExact: []string{controllers},
		allowed:        []string{"controllers/runtimeclass", "controllers/feature", "controllers/executor", "api", "internal", "pkg", "pipeline"},
	},
	{
		pkg:       "controllers/internal/coalesce",
		why:       "the shared-read coalescer is a plain utility",
		forbidden: []string{"k8s.io/", "sigs.k8s.io/"},
		allowed:   []string{"controllers/internal/coalesce"},
	},
	{
		pkg:       "controllers/internal/callmemo",
		why:       "the per-call memo is a plain utility: a call's key and uid, no client",
		forbidden: []string{"sigs.k8s.io/", "k8s.io/client-go", "k8s.io/api/"},
		allowed:   []string{"controllers/internal/callmemo"},
	},
	{
		pkg:            "controllers/warmpool/...",
		why:            "the warm pools: controllers (the ToolCall reconciler) uses it, never the reverse",
		forbiddenExact: []string{controllers},
		allowed:        []string{"controllers", "internal", "api/v1alpha1", "pkg", "pipeline"},
	},
	{
		pkg:            "controllers/registration/...",
		why:            "the registration reconcilers: controllers (the ToolCall reconciler) uses them, never the reverse",
		forbiddenExact: []string{controllers},
		allowed:        []string{"controllers", "internal", "api/v1alpha1", "pkg", "pipeline"},
	},
	{
		pkg:            "controllers/history/...",
		why:            "the call history: controllers (the ToolCall reconciler) uses it, never the reverse",
		forbiddenExact: []string{controllers},
		allowed:        []string{"controllers", "internal", "api/v1alpha1", "pkg", "pipeline"},
	},
}

// aboveFeatures are the packages that call the features (controllers/feature): the ToolCall
// reconciler and the executors. A feature's package never imports them.
var aboveFeatures = []string{
	module + "controllers/toolcall", module + "controllers/executor/jobexec",
	module + "controllers/executor/warmexec", module + "controllers/executor/execenv",
}

// controllers is the reconcilers' package: the packages split out of it may not import it.
const controllers = module + "controllers"

// TestLayering: no package of a rule depends on what the rule forbids. A failure names the
// edge that brings the dependency in.
func TestLayering(t *testing.T) {
	for _, r := range rules {
		for _, pkg := range goList(t, module+r.pkg) {
			imports := map[string][]string{} // each dependency's own imports
			for _, line := range goList(t, "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", pkg) {
				f := strings.Fields(line)
				imports[f[0]] = f[1:]
			}
			for dep := range imports {
				why := r.forbids(dep)
				// Only the edges that bring a forbidden package in: what it imports in turn is noise.
				by := slices.DeleteFunc(importers(imports, dep), func(p string) bool { return r.forbids(p) != "" })
				if why != "" && len(by) > 0 {
					t.Errorf("%s (%s) depends on %s, %s (imported by %s)", strings.TrimPrefix(pkg, module), r.why, dep, why, strings.Join(by, ", "))
				}
			}
		}
	}
}

func (r rule) forbids(dep string) string {
	for _, f := range r.forbidden {
		if strings.HasPrefix(dep, f) {
			return "which is forbidden"
		}
	}
	if slices.Contains(r.forbiddenExact, dep) {
		return "which is forbidden"
	}
	if rel, ok := strings.CutPrefix(dep, module); ok && !slices.ContainsFunc(r.allowed, func(a string) bool {
		return rel == a || strings.HasPrefix(rel, a+"/")
	}) {
		return "which is not among " + strings.Join(r.allowed, ", ")
	}
	return ""
}

func importers(imports map[string][]string, dep string) []string {
	var out []string
	for pkg, imps := range imports {
		if slices.Contains(imps, dep) {
			out = append(out, pkg)
		}
	}
	slices.Sort(out)
	return out
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestForbiddenExact: a path forbidden exactly is that package only, not the packages under it.
func TestForbiddenExact(t *testing.T) {
	r := rule{forbiddenExact: []string{controllers}, allowed: []string{"controllers"}}
	if r.forbids(controllers) == "" {
		t.Error("controllers itself must be forbidden")
	}
	if why := r.forbids(controllers + "/warmpool"); why != "" {
		t.Errorf("controllers/warmpool must be allowed, got %q", why)
	}
}
