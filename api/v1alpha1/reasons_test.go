package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// controllerReasons are the API reasons that only controllers write, not the pipeline: the
// registration and approval conditions, the Executed condition's progress, the Completed
// condition's phase and the operator's own failures. Every other API reason is a pipeline
// reason (same name, same value). A new reason goes into api/v1alpha1/conditions.go and, if
// the pipeline does not decide it, here.
var controllerReasons = map[string]string{
	"Registered":                     "Tool, ClusterTool: Registered=True",
	"Ready":                          "ToolScope, ToolPolicy: Ready=True",
	"PoolKept":                       "ClusterTool: WarmPool=True",
	"NamespaceMissing":               "ClusterTool: WarmPool=False",
	"PresentationInvalid":            "Tool, ClusterTool: Registered=False",
	"PolicyCompileError":             "ToolPolicy: Ready=False",
	"Resolved":                       "ToolCall: Resolved=True",
	"Queued":                         "ToolCall: Executed=Unknown",
	"Running":                        "ToolCall: Executed=Unknown",
	"Stopping":                       "ToolCall: Executed=Unknown (its Pods are being stopped)",
	"Failed":                         "ToolCall: Completed=True (the phase)",
	"Denied":                         "ToolCall: Completed=True (the phase)",
	"Applied":                        "ToolCallApproval: Consumed=True",
	"DigestMismatch":                 "ToolCallApproval: Consumed=False",
	"ResultUnreadable":               "ToolCall: result, Executed=False",
	"OperatorError":                  "ToolCall: result",
	"NetworkIsolationMissing":        "ToolCall: result, Executed=False (the namespace's NetworkPolicies do not isolate the Pod)",
	"PolicyUnavailable":              "ToolCall: ResultAccepted=Unknown (post-execute waits for its policies)",
	"WorkspaceNeedsSession":          "ToolCall: result, Executed=False (a workspace tool called without spec.session)",
	"NoWorkspace":                    "ToolCall: result, Executed=False (no scope on the chain declares a workspace)",
	"WorkspaceUnbound":               "ToolCall: result, Executed=False (the session's claim did not bind in time)",
	"WorkspaceCredentialsUnrecorded": "ToolCall: result, Executed=False (the session's claim cannot record the credentials its files may hold)",
	"WaitingForAdmission":            "ToolCall: Executed=Unknown (the attempt's Job waits, suspended, for admission)",
	"NotAdmitted":                    "ToolCall: result, Executed=False (the attempt's Job was not admitted within its bound)",
}

// stringConsts returns the string constants declared in the non-test Go files of dir whose
// name and declared type pass keep (typ is "" for an untyped constant), by name.
func stringConsts(t *testing.T, dir string, keep func(name, typ string) bool) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				typ := ""
				if id, ok := vs.Type.(*ast.Ident); ok {
					typ = id.Name
				}
				for i, name := range vs.Names {
					if i >= len(vs.Values) || !keep(name.Name, typ) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					if out[name.Name], err = strconv.Unquote(lit.Value); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no constants found in %s", dir)
	}
	return out
}

// The API's reasons and the pipeline's agree: every pipeline.Reason has an API constant of
// the same name and value, and every API reason is a pipeline reason or one that only a
// controller writes (controllerReasons). A reason added on one side only fails here.
func TestAPIReasonsAgreeWithPipelineReasons(t *testing.T) {
	api := stringConsts(t, ".", func(name, _ string) bool { return strings.HasPrefix(name, "Reason") })
	pipe := stringConsts(t, filepath.Join("..", "..", "pipeline"), func(_, typ string) bool { return typ == "Reason" })

	for _, name := range sortedKeys(pipe) {
		switch v, ok := api[name]; {
		case !ok:
			t.Errorf("pipeline.%s = %q has no v1alpha1.%s: declare it in api/v1alpha1/conditions.go", name, pipe[name], name)
		case v != pipe[name]:
			t.Errorf("v1alpha1.%s = %q but pipeline.%s = %q", name, v, name, pipe[name])
		}
	}
	for _, name := range sortedKeys(api) {
		value := api[name]
		if name != "Reason"+value {
			t.Errorf("v1alpha1.%s = %q: a reason constant is named Reason<its value>", name, value)
		}
		if _, ok := pipe[name]; !ok && controllerReasons[value] == "" {
			t.Errorf("v1alpha1.%s = %q is neither a pipeline reason (add pipeline.%s) nor one only a controller writes (add it to controllerReasons)",
				name, value, name)
		}
	}
	values := map[string]bool{}
	for _, v := range api {
		values[v] = true
	}
	for _, v := range sortedKeys(controllerReasons) {
		if !values[v] {
			t.Errorf("controllerReasons lists %q, which is no v1alpha1 reason constant", v)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
