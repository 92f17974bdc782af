package warmpool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/controllers/feature/all"
)

// usingFeature are tool specs that use one feature each.
var usingFeature = map[feature.Name]func(*v1alpha1.ToolSpec){
	feature.Workspace: func(s *v1alpha1.ToolSpec) { s.Sandbox.Workspace = v1alpha1.WorkspaceReadWrite },
	feature.Credentials: func(s *v1alpha1.ToolSpec) {
		s.Body.Env = []v1alpha1.EnvVar{{Name: "TOKEN", ValueFrom: &v1alpha1.EnvVarSource{SecretKeyRef: v1alpha1.CredentialKeySelector{Name: "gh", Key: "token"}}}}
	},
	feature.Egress: func(s *v1alpha1.ToolSpec) {
		s.Sandbox.Network = v1alpha1.NetworkEgress
		s.Sandbox.Egress = &v1alpha1.Egress{Allow: []v1alpha1.EgressRule{{Host: "api.github.com", Port: 443}}}
	},
	feature.RuntimeClass: func(s *v1alpha1.ToolSpec) { s.Sandbox.RuntimeClassName = ptr.To("gvisor") },
}

// poolOfUnclaimable are the features the warm executor does not support whose pools the
// API still accepts (test/integration/api: "a warm ReadWrite tool (its calls run cold)"):
// their pools keep no Pods.
var poolOfUnclaimable = map[feature.Name]bool{feature.Workspace: true}

// TestSupportTableAndAPIAgree ties the warm executor's support table (Supports) to the
// API's CEL rules on ToolSpec and to the pools: a tool with a warm pool and a feature the
// table supports is accepted and kept; one with a feature it does not support is refused
// by a CEL rule, or (poolOfUnclaimable) accepted and kept at size 0. Adding a feature to
// the table, or a CEL rule, without the other fails here.
func TestSupportTableAndAPIAgree(t *testing.T) {
	rules := toolSpecRules(t)
	for _, name := range feature.Names {
		use, ok := usingFeature[name]
		if !ok {
			t.Fatalf("no tool spec that uses %q: add one to usingFeature", name)
		}
		spec := &v1alpha1.ToolSpec{Body: v1alpha1.ToolBody{Image: "example/t:1"},
			WarmPool: &v1alpha1.WarmPool{Size: 2, MaxIdle: &metav1.Duration{Duration: time.Minute}}}
		use(spec)
		if !all.Used(spec).Has(name) {
			t.Fatalf("%s: the example does not use it (all.Used %v)", name, all.Used(spec))
		}
		refused := refusedBy(t, rules, spec)
		switch {
		case Supports.Has(name) && (refused != "" || Size(spec) != 2):
			t.Errorf("%s is supported by the warm executor, but the API refuses its pool (%s) or its pool is kept at %d", name, refused, Size(spec))
		case !Supports.Has(name) && poolOfUnclaimable[name] && (refused != "" || Size(spec) != 0):
			t.Errorf("%s is not supported by the warm executor and its pool is accepted: want it kept at 0, got %d (refused: %q)", name, Size(spec), refused)
		case !Supports.Has(name) && !poolOfUnclaimable[name] && refused == "":
			t.Errorf("%s is not supported by the warm executor, and no CEL rule refuses a pool for it", name)
		case !Supports.Has(name) && Size(spec) != 0:
			// A pool the API refuses is still kept at 0 should one get past it (stored before
			// the rule, or the rule dropped): its Pods would hold, e.g., a Secret's value
			// before any call.
			t.Errorf("%s is not supported by the warm executor, but its pool is kept at %d, want 0", name, Size(spec))
		}
		spec.WarmPool = nil
		if refused := refusedBy(t, rules, spec); refused != "" {
			t.Errorf("%s without a pool is refused: %s", name, refused)
		}
	}
}

// toolSpecRules are the CEL rules of the markers right above ToolSpec.
func toolSpecRules(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "api", "v1alpha1", "shared_types.go"))
	if err != nil {
		t.Fatal(err)
	}
	before, _, found := strings.Cut(string(src), "\ntype ToolSpec struct {")
	if !found {
		t.Fatal("no ToolSpec in shared_types.go")
	}
	var rules []string
	lines := strings.Split(before, "\n")
	marker := regexp.MustCompile(`^// \+kubebuilder:validation:XValidation:rule="(.*)",message=`)
	for i := len(lines) - 1; i >= 0 && strings.HasPrefix(lines[i], "//"); i-- {
		if m := marker.FindStringSubmatch(lines[i]); m != nil {
			rules = append(rules, m[1])
		}
	}
	if len(rules) < 3 {
		t.Fatalf("read %d CEL rules above ToolSpec", len(rules))
	}
	return rules
}

// refusedBy is the first rule spec fails ("" when it passes them all).
func refusedBy(t *testing.T, rules []string, spec *v1alpha1.ToolSpec) string {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("self", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var self map[string]any
	if err := json.Unmarshal(data, &self); err != nil {
		t.Fatal(err)
	}
	for _, rule := range rules {
		ast, iss := env.Compile(rule)
		if iss.Err() != nil {
			t.Fatalf("rule %q: %v", rule, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := prg.Eval(map[string]any{"self": self})
		if err != nil {
			t.Fatalf("rule %q on %s: %v", rule, data, err)
		}
		if out.Value() != true {
			return rule
		}
	}
	return ""
}
