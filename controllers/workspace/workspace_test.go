package workspace

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

func TestWorkspaceClaimNameIsDeterministicDistinctAndAName(t *testing.T) {
	long := strings.Repeat("s", 63)
	names := map[string]string{}
	for _, c := range [][3]string{{"coding", "alice", "s1"}, {"coding", "alice", "s2"}, {"other", "alice", "s1"},
		{"coding", "bob", "s1"}, {long, "alice", "x/y:z@w"}, {"a-", "alice", "b"}, {"a", "alice", "-b"}, {"a", "alice\x00b", ""}, {"a", "alice", "\x00b"}} {
		name := ClaimName(c[0], c[1], c[2])
		if name != ClaimName(c[0], c[1], c[2]) {
			t.Fatalf("%v: not deterministic", c)
		}
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			t.Errorf("%v: %q is no DNS label: %v", c, name, errs)
		}
		if prev, dup := names[name]; dup {
			t.Errorf("%v and %s share the claim %q", c, prev, name)
		}
		names[name] = c[0] + "/" + c[1] + "/" + c[2]
	}
}

func TestSessionLabelValue(t *testing.T) {
	for _, s := range []string{"s1", "agent@example.com/42", strings.Repeat("x", 200), "a:b"} {
		if errs := validation.IsValidLabelValue(SessionLabelValue(s)); len(errs) > 0 {
			t.Errorf("%q: %v", s, errs)
		}
	}
	if got := SessionLabelValue("s1"); got != "s1" {
		t.Errorf("a session that is a label value is kept: %q", got)
	}
}

func TestSessionSafe(t *testing.T) {
	cases := []struct {
		access toolgatev1alpha1.WorkspaceAccess
		safe   bool
		want   bool
	}{
		{"", false, false},
		{"", true, true},
		{toolgatev1alpha1.WorkspaceReadWrite, false, false},
		{toolgatev1alpha1.WorkspaceReadWrite, true, false}, // the API refuses it; a barrier all the same
		{toolgatev1alpha1.WorkspaceReadOnly, false, true},
		{toolgatev1alpha1.WorkspaceReadOnly, true, true},
	}
	for _, c := range cases {
		spec := &toolgatev1alpha1.ToolSpec{ConcurrencySafe: c.safe, Sandbox: toolgatev1alpha1.Sandbox{Workspace: c.access}}
		if got := SessionSafe(spec); got != c.want {
			t.Errorf("workspace %q, concurrencySafe %v: safe %v, want %v", c.access, c.safe, got, c.want)
		}
	}
}

func TestBuildClaim(t *testing.T) {
	call := &toolgatev1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "agents"},
		Spec: toolgatev1alpha1.ToolCallSpec{Session: "agent@x/1", Requester: "alice"}}
	scope := &toolgatev1alpha1.ToolScope{ObjectMeta: metav1.ObjectMeta{Name: "coding", Namespace: "agents"}}
	size := resource.MustParse("2Gi")
	cases := []struct {
		name  string
		decl  toolgatev1alpha1.Workspace
		opts  Options
		class *string
	}{
		{"the scope's class wins", toolgatev1alpha1.Workspace{StorageClassName: ptr.To("fast")}, Options{StorageClass: "local"}, ptr.To("fast")},
		{"the operator's default", toolgatev1alpha1.Workspace{}, Options{StorageClass: "local"}, ptr.To("local")},
		{"the cluster's default", toolgatev1alpha1.Workspace{}, Options{}, nil},
	}
	for _, c := range cases {
		c.decl.Size, c.decl.Retention = &size, &metav1.Duration{Duration: 90 * time.Second}
		pvc := buildClaim(call, scope, &c.decl, c.opts)
		if diff := cmp.Diff(c.class, pvc.Spec.StorageClassName); diff != "" {
			t.Errorf("%s: storage class (-want +got):\n%s", c.name, diff)
		}
		want := map[string]string{podcontract.AnnotationWorkspaceSession: "agent@x/1", podcontract.AnnotationWorkspaceRequester: "alice",
			podcontract.AnnotationWorkspaceRetention: "1m30s"}
		if diff := cmp.Diff(want, pvc.Annotations); diff != "" {
			t.Errorf("%s: annotations (-want +got):\n%s", c.name, diff)
		}
		if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(size) != 0 || pvc.Spec.AccessModes[0] != corev1.ReadWriteOnce {
			t.Errorf("%s: size %s, modes %v", c.name, got.String(), pvc.Spec.AccessModes)
		}
		if pvc.Name != ClaimName("coding", "alice", "agent@x/1") || pvc.Labels[podcontract.LabelWorkspaceScope] != "coding" {
			t.Errorf("%s: name %s labels %v", c.name, pvc.Name, pvc.Labels)
		}
	}
}
