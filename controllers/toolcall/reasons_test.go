package toolcall

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/config/crd"
)

// apiReasons returns the values of the API's Reason<Name> constants (api/v1alpha1).
func apiReasons(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "..", "api", "v1alpha1", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if lit, ok := valueAt(vs, i).(*ast.BasicLit); ok && strings.HasPrefix(name.Name, "Reason") && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					out[v] = true
				}
			}
			return false
		})
	}
	if len(out) == 0 {
		t.Fatal("no reason constants in api/v1alpha1")
	}
	return out
}

func valueAt(vs *ast.ValueSpec, i int) ast.Expr {
	if i < len(vs.Values) {
		return vs.Values[i]
	}
	return nil
}

// The controllers write no reason of their own making: none is declared here with a literal
// value, and none is written as a literal (a condition's reason, a result's, a Condition's
// field). Every one comes from api/v1alpha1, where its agreement with the pipeline is tested.
func TestControllersWriteOnlyAPIReasons(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var found []string
	report := func(n ast.Node, what string) {
		found = append(found, fset.Position(n.Pos()).String()+": "+what)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if _, lit := valueAt(n, i).(*ast.BasicLit); lit && strings.HasPrefix(name.Name, "Reason") {
						report(n, name.Name+" is declared with a literal value: declare it in api/v1alpha1")
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "setCondition" && len(n.Args) > 3 {
					if lit, ok := n.Args[3].(*ast.BasicLit); ok {
						report(n, "setCondition with the literal reason "+lit.Value)
					}
				}
			case *ast.KeyValueExpr:
				if key, ok := n.Key.(*ast.Ident); ok && key.Name == "Reason" {
					if lit, ok := n.Value.(*ast.BasicLit); ok {
						report(n, "Reason: "+lit.Value)
					}
				}
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					sel, ok := lhs.(*ast.SelectorExpr)
					if ok && sel.Sel.Name == "Reason" && i < len(n.Rhs) {
						if lit, ok := n.Rhs[i].(*ast.BasicLit); ok {
							report(n, ".Reason = "+lit.Value)
						}
					}
				}
			}
			return true
		})
	}
	for _, f := range found {
		t.Error(f)
	}
}

// assertAPIReasons checks that every reason the call's status carries is an API reason.
func assertAPIReasons(t *testing.T, reasons map[string]bool, call *v1alpha1.ToolCall) {
	t.Helper()
	for _, c := range call.Status.Conditions {
		if !reasons[c.Reason] {
			t.Errorf("condition %s has reason %q, which is no v1alpha1 reason constant", c.Type, c.Reason)
		}
	}
	if r := call.Status.Result; r != nil && !reasons[r.Reason] {
		t.Errorf("result reason %q is no v1alpha1 reason constant", r.Reason)
	}
	for _, a := range call.Status.Attempts {
		if a.Reason != "" && !reasons[a.Reason] {
			t.Errorf("attempt %d reason %q is no v1alpha1 reason constant", a.Attempt, a.Reason)
		}
	}
}

// documentedConsumedReasons reads the reasons the ToolCallApproval CRD documents for its
// Consumed condition (status.conditions' description, from the API type's comment).
func documentedConsumedReasons(t *testing.T, reasons map[string]bool) []string {
	t.Helper()
	data, err := crd.FS.ReadFile("bases/toolgate.dev_toolcallapprovals.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]struct {
								Description string `json:"description"`
							} `json:"properties"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	desc := doc.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["conditions"].Description
	m := regexp.MustCompile(`Consumed \(reasons ([^)]*)\)`).FindStringSubmatch(desc)
	if m == nil {
		t.Fatalf("status.conditions of ToolCallApproval does not list \"Consumed (reasons ...)\": %q", desc)
	}
	set := map[string]bool{}
	for _, reason := range strings.Split(m[1], ",") {
		reason = strings.TrimSpace(reason)
		if !reasons[reason] {
			t.Errorf("ToolCallApproval documents the Consumed reason %q, which is no v1alpha1 reason constant", reason)
		}
		set[reason] = true
	}
	return sortedSet(set)
}

func sortedSet(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The reasons a ToolCallApproval's Consumed condition can carry are exactly the ones its API
// documents: each answer an approver can give, in time or late, marks the approval with one
// of them, and the documentation names no reason the controller never sets.
func TestConsumedReasonsAreTheDocumentedOnes(t *testing.T) {
	otherDigest := "sha256:" + strings.Repeat("0", 64)
	cases := []struct {
		name       string
		decision   v1alpha1.ApprovalDecision
		approver   string
		digest     string // "" is the call's own
		late       bool
		uid        string // "" is the call's own
		stale      bool   // created long before the call was parked
		consumedBy string // status.consumedBy the approval already carries
		wantStatus metav1.ConditionStatus
	}{
		{name: "approved", decision: v1alpha1.DecisionApprove, approver: "bob", wantStatus: metav1.ConditionTrue},
		{name: "denied", decision: v1alpha1.DecisionDeny, approver: "bob", wantStatus: metav1.ConditionTrue},
		{name: "self-approval", decision: v1alpha1.DecisionApprove, approver: "alice", wantStatus: metav1.ConditionFalse},
		{name: "self-approval, window closed", decision: v1alpha1.DecisionApprove, approver: "alice", late: true, wantStatus: metav1.ConditionFalse},
		{name: "other arguments", decision: v1alpha1.DecisionApprove, approver: "bob", digest: otherDigest, wantStatus: metav1.ConditionFalse},
		{name: "denied, other arguments", decision: v1alpha1.DecisionDeny, approver: "bob", digest: otherDigest, wantStatus: metav1.ConditionTrue},
		{name: "approved after the window", decision: v1alpha1.DecisionApprove, approver: "bob", late: true, wantStatus: metav1.ConditionFalse},
		{name: "another call's uid", decision: v1alpha1.DecisionApprove, approver: "bob", uid: "uid-of-an-earlier-call", wantStatus: metav1.ConditionFalse},
		{name: "created before the call was parked", decision: v1alpha1.DecisionApprove, approver: "bob", stale: true, wantStatus: metav1.ConditionFalse},
		{name: "consumed by another call", decision: v1alpha1.DecisionApprove, approver: "bob", consumedBy: "uid-of-an-earlier-call", wantStatus: metav1.ConditionFalse},
	}
	reasons := apiReasons(t)
	produced := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, c := unitReconciler(t, interceptor.Funcs{}, unitEcho(), unitPolicy("ask", v1alpha1.VerdictAsk), unitCall("c", "echo"))
			call := reconcileUntilStill(t, r, c, "c")
			if call.Status.Phase != v1alpha1.PhaseAwaitingApproval {
				t.Fatalf("phase %q, want the call parked", call.Status.Phase)
			}
			digest := tc.digest
			if digest == "" {
				digest = call.Status.ArgumentsDigest
			}
			uid := tc.uid
			if uid == "" {
				uid = string(call.UID)
			}
			created := *call.Status.AdmittedTime
			if tc.stale {
				created = metav1.NewTime(created.Add(-time.Hour))
			}
			if tc.late { // answered after the window closed
				r.Clock.(*clocktesting.FakeClock).Step(2 * time.Hour)
				created = metav1.NewTime(r.Clock.Now())
			}
			approval := &v1alpha1.ToolCallApproval{
				ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", CreationTimestamp: created},
				Spec:       v1alpha1.ToolCallApprovalSpec{Decision: tc.decision, CallUID: uid, ArgumentsDigest: digest, Approver: tc.approver},
			}
			if err := c.Create(context.Background(), approval); err != nil {
				t.Fatal(err)
			}
			if tc.consumedBy != "" {
				approval.Status.ConsumedBy = tc.consumedBy
				if err := c.Status().Update(context.Background(), approval); err != nil {
					t.Fatal(err)
				}
			}
			assertAPIReasons(t, reasons, reconcileUntilStill(t, r, c, "c"))
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(approval), approval); err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(approval.Status.Conditions, v1alpha1.ConditionConsumed)
			if cond == nil {
				t.Fatal("the answered approval is not marked Consumed")
			}
			if cond.Status != tc.wantStatus {
				t.Errorf("Consumed=%s (%s), want %s", cond.Status, cond.Reason, tc.wantStatus)
			}
			if !reasons[cond.Reason] {
				t.Errorf("Consumed reason %q is no v1alpha1 reason constant", cond.Reason)
			}
			produced[cond.Reason] = true
		})
	}
	documented := documentedConsumedReasons(t, reasons)
	if got := sortedSet(produced); strings.Join(got, ",") != strings.Join(documented, ",") {
		t.Errorf("the controller sets Consumed reasons %v; ToolCallApproval's status.conditions documents %v", got, documented)
	}
}
