package workspace

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/google/go-cmp/cmp"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// credSpec is a tool mounting access whose body is given a Secret key in its environment
// and two as files (creds), or none.
func credSpec(access toolgatev1alpha1.WorkspaceAccess, creds bool) *toolgatev1alpha1.ToolSpec {
	s := &toolgatev1alpha1.ToolSpec{Body: toolgatev1alpha1.ToolBody{Image: "example/echo:1"},
		Sandbox: toolgatev1alpha1.Sandbox{Workspace: access}}
	if !creds {
		return s
	}
	key := func(name, key string) toolgatev1alpha1.CredentialKeySelector {
		return toolgatev1alpha1.CredentialKeySelector{Name: name, Key: key}
	}
	s.Body.Env = []toolgatev1alpha1.EnvVar{{Name: "GITHUB_TOKEN", ValueFrom: &toolgatev1alpha1.EnvVarSource{SecretKeyRef: key("github", "token")}}}
	s.Body.SecretFiles = []toolgatev1alpha1.SecretFile{{Name: "kubeconfig", SecretKeyRef: key("deploy", "config")}, {Name: "ca.pem", SecretKeyRef: key("deploy", "ca")}}
	return s
}

func wsCred(secret, key string) podcontract.WorkspaceCredential {
	return podcontract.WorkspaceCredential{Secret: secret, Key: key}
}

// Only a ReadWrite mount of a tool with credentials adds to the record: its Secret keys,
// sorted, once each.
func TestWorkspaceCredentials(t *testing.T) {
	spec := func(access toolgatev1alpha1.WorkspaceAccess, creds bool) *toolgatev1alpha1.ToolSpec {
		s := credSpec(access, creds)
		if creds {
			s.Body.Env = append(s.Body.Env, s.Body.Env...) // the same keys twice
		}
		return s
	}
	want := []podcontract.WorkspaceCredential{wsCred("deploy", "ca"), wsCred("deploy", "config"), wsCred("github", "token")}
	if d := cmp.Diff(workspaceCredentials(spec(toolgatev1alpha1.WorkspaceReadWrite, true)), want); d != "" {
		t.Errorf("ReadWrite with credentials (-got +want):\n%s", d)
	}
	for name, s := range map[string]*toolgatev1alpha1.ToolSpec{
		"ReadOnly with credentials":      spec(toolgatev1alpha1.WorkspaceReadOnly, true),
		"ReadWrite without credentials":  spec(toolgatev1alpha1.WorkspaceReadWrite, false),
		"no workspace, with credentials": spec("", true),
		"no snapshot (not yet resolved)": nil,
	} {
		if got := workspaceCredentials(s); len(got) != 0 {
			t.Errorf("%s: %v", name, got)
		}
	}
}

// credClaimWorld is a session's claim (recording record, unless nil) in a fake API server
// that counts the patches of claims.
func credClaimWorld(t *testing.T, record *string) (*Claims, *int) {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(scheme))
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "ws", Namespace: "ns", Annotations: map[string]string{}}}
	if record != nil {
		pvc.Annotations[podcontract.AnnotationWorkspaceCredentials] = *record
	}
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pvc).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			return c.Patch(ctx, obj, patch, opts...)
		}}).Build()
	return &Claims{Client: c, APIReader: c}, &patches
}

// credCall is a call of a tool with credentials (none: creds false) mounting access.
func credCall(access toolgatev1alpha1.WorkspaceAccess, creds bool) *toolgatev1alpha1.ToolCall {
	return &toolgatev1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
		Status: toolgatev1alpha1.ToolCallStatus{Tool: &toolgatev1alpha1.ToolSnapshot{Spec: credSpec(access, creds)}}}
}

func liveClaim(t *testing.T, e *Claims) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := e.APIReader.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "ws"}, pvc); err != nil {
		t.Fatal(err)
	}
	return pvc
}

// The record grows by one patch when a ReadWrite call of a tool with credentials adds to
// it, and no other call writes it; every call gets the whole record for its Pod.
func TestClaimCredentialsPatchesOnlyWhenTheSetGrows(t *testing.T) {
	github := `[{"secret":"github","key":"token"}]`
	all := []podcontract.WorkspaceCredential{wsCred("deploy", "ca"), wsCred("deploy", "config"), wsCred("github", "token")}
	cases := []struct {
		name    string
		record  *string
		call    *toolgatev1alpha1.ToolCall
		patches int
		want    []podcontract.WorkspaceCredential
	}{
		{"ReadWrite with credentials, nothing recorded", nil, credCall(toolgatev1alpha1.WorkspaceReadWrite, true), 1, all},
		{"ReadWrite with credentials, some recorded", &github, credCall(toolgatev1alpha1.WorkspaceReadWrite, true), 1, all},
		{"ReadWrite with credentials, all recorded", ptr.To(encodeCredentials(all)), credCall(toolgatev1alpha1.WorkspaceReadWrite, true), 0, all},
		{"ReadOnly with credentials", &github, credCall(toolgatev1alpha1.WorkspaceReadOnly, true), 0, []podcontract.WorkspaceCredential{wsCred("github", "token")}},
		{"ReadWrite without credentials", &github, credCall(toolgatev1alpha1.WorkspaceReadWrite, false), 0, []podcontract.WorkspaceCredential{wsCred("github", "token")}},
		{"nothing recorded, nothing to record", nil, credCall(toolgatev1alpha1.WorkspaceReadOnly, false), 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, patches := credClaimWorld(t, tc.record)
			got, st, ok, err := e.claimCredentials(context.Background(), tc.call, liveClaim(t, e))
			if !ok || err != nil {
				t.Fatalf("refused: %+v, %v", st.Refused, err)
			}
			if d := cmp.Diff(got, tc.want); d != "" {
				t.Errorf("record for the Pod (-got +want):\n%s", d)
			}
			if *patches != tc.patches {
				t.Errorf("%d patches, want %d", *patches, tc.patches)
			}
			var stored []podcontract.WorkspaceCredential
			if raw, has := liveClaim(t, e).Annotations[podcontract.AnnotationWorkspaceCredentials]; has {
				if err := json.Unmarshal([]byte(raw), &stored); err != nil {
					t.Fatal(err)
				}
			}
			if d := cmp.Diff(stored, tc.want); d != "" {
				t.Errorf("record on the claim (-got +want):\n%s", d)
			}
		})
	}
}

// fullRecord is a record of n distinct Secret keys.
func fullRecord(n int) string {
	refs := make([]podcontract.WorkspaceCredential, 0, n)
	for i := range n {
		refs = append(refs, wsCred("s"+strconv.Itoa(100+i), "k"))
	}
	return encodeCredentials(refs)
}

// A record that would grow past the bound refuses the call before its Job, without a
// write; reaching the bound exactly does not. A record the operator did not write refuses
// every call that mounts the claim.
func TestClaimCredentialsBoundAndAlteredRecord(t *testing.T) {
	rw, ro := credCall(toolgatev1alpha1.WorkspaceReadWrite, true), credCall(toolgatev1alpha1.WorkspaceReadOnly, false)
	cases := []struct {
		name    string
		record  string
		call    *toolgatev1alpha1.ToolCall
		refused bool
	}{
		{"reaching the bound", fullRecord(podcontract.MaxWorkspaceCredentials - 3), rw, false},
		{"past the bound", fullRecord(podcontract.MaxWorkspaceCredentials - 2), rw, true},
		{"at the bound, adding nothing", fullRecord(podcontract.MaxWorkspaceCredentials), ro, false},
		{"not JSON", `github/token`, ro, true},
		{"unsorted", `[{"secret":"b","key":"k"},{"secret":"a","key":"k"}]`, ro, true},
		{"repeated", `[{"secret":"a","key":"k"},{"secret":"a","key":"k"}]`, ro, true},
		{"no Secret name", `[{"secret":"","key":"k"}]`, ro, true},
		{"over the bound", fullRecord(podcontract.MaxWorkspaceCredentials + 1), ro, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, patches := credClaimWorld(t, &tc.record)
			_, st, ok, err := e.claimCredentials(context.Background(), tc.call, liveClaim(t, e))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.refused {
				if !ok {
					t.Fatalf("refused: %+v", st.Refused)
				}
				return
			}
			if ok || st.Refused == nil || st.Refused.Reason != toolgatev1alpha1.ReasonWorkspaceCredentialsUnrecorded {
				t.Fatalf("not refused WorkspaceCredentialsUnrecorded: ok %v, %+v", ok, st.Refused)
			}
			if st.Refused.Message == "" || *patches != 0 {
				t.Errorf("message %q, %d patches", st.Refused.Message, *patches)
			}
		})
	}
}

// The session's first call records its credentials as it creates the claim: no patch.
func TestBuildClaimRecordsTheCreatingCallsCredentials(t *testing.T) {
	scope := &toolgatev1alpha1.ToolScope{ObjectMeta: metav1.ObjectMeta{Name: "coding", Namespace: "ns"}}
	decl := &toolgatev1alpha1.Workspace{}
	pvc := buildClaim(credCall(toolgatev1alpha1.WorkspaceReadWrite, true), scope, decl, Options{})
	want := encodeCredentials(workspaceCredentials(credCall(toolgatev1alpha1.WorkspaceReadWrite, true).Status.Tool.Spec))
	if got := pvc.Annotations[podcontract.AnnotationWorkspaceCredentials]; got != want {
		t.Errorf("record %q, want %q", got, want)
	}
	pvc = buildClaim(credCall(toolgatev1alpha1.WorkspaceReadOnly, true), scope, decl, Options{})
	if got, has := pvc.Annotations[podcontract.AnnotationWorkspaceCredentials]; has {
		t.Errorf("a ReadOnly call records %q", got)
	}
}
