package sessionexec

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor/execenv"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/controllers/warmpool"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

func testExecutor(t *testing.T) *Executor {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	s, err := New(execenv.Env{Scheme: scheme, Options: options.Call{Job: podspec.DefaultOptions(),
		Session: options.Session{IdleTimeout: time.Minute}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pooledCall(spec *v1alpha1.ToolSpec) *v1alpha1.ToolCall {
	return &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: "team-a", UID: "call-uid"},
		Spec:   v1alpha1.ToolCallSpec{Tool: "echo", Scope: "fast", Session: "s", Requester: "alice"},
		Status: v1alpha1.ToolCallStatus{Tool: &v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "echo", Spec: spec}}}
}

// A session pool Pod is built before any call as the session executor builds the session's
// Pod for a call (with its arguments, attempt and trace context): the digest recorded at
// claim is the one each of the session's calls asks for, so a claimed Pod is used, not
// replaced, and one whose spec was changed is not.
func TestSessionPoolPodIsTheSessionPod(t *testing.T) {
	s := testExecutor(t)
	scope := &v1alpha1.ToolScope{ObjectMeta: metav1.ObjectMeta{Name: "fast", Namespace: "team-a", UID: "scope-uid"}}
	for _, spec := range []*v1alpha1.ToolSpec{
		{Body: v1alpha1.ToolBody{Image: "example/echo:1", Command: []string{"/echo"}}, WarmPool: &v1alpha1.WarmPool{Size: 2}},
		{Body: v1alpha1.ToolBody{Image: "example/echo:1", Command: []string{"/echo"}}, WarmPool: &v1alpha1.WarmPool{Size: 2},
			Sandbox: v1alpha1.Sandbox{RuntimeClassName: ptr.To("gvisor")}},
	} {
		call := pooledCall(spec)
		in := podspec.Input{Call: call, Tool: spec, Arguments: []byte(`{"n":1}`), Digest: "sha256:abc", Attempt: 3,
			Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
		want, err := s.buildPod(call, scope, "echo-warms-abcde", podspec.SessionPodSpec(in, s.Options.Job, "echo-warms-abcde"))
		if err != nil {
			t.Fatal(err)
		}
		pool := warmpool.SessionPodSpec(spec, s.Options.Job, "echo-warms-abcde")
		if got, w := podspec.SessionSpecDigest(&want.Spec), podspec.SessionSpecDigest(&pool); got != w {
			t.Errorf("runtime class %v: the call's session Pod spec digest %s, the pool's %s", spec.Sandbox.RuntimeClassName, got, w)
		}
		if why := warmpool.PodSpecMismatch(&pool, &want.Spec); why != "" {
			t.Errorf("the pool's spec differs: %s", why)
		}
	}
}

// A session's binding is what lets its claimed Pod be found again, and it is what keeps
// the Pod from any other session: labels can be rewritten, the binding cannot.
func TestBindings(t *testing.T) {
	var b bindings
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "echo-warms-abcde", Namespace: "team-a", UID: "pod-uid"}}
	if _, ok := b.claimed("d1"); ok {
		t.Fatal("a session with no claim has a Pod")
	}
	b.bind("d1", pod, true, time.Unix(100, 0))
	if k, ok := b.claimed("d1"); !ok || k != (types.NamespacedName{Namespace: "team-a", Name: "echo-warms-abcde"}) {
		t.Errorf("claimed = %v %v", k, ok)
	}
	if d, ok := b.boundTo("pod-uid"); !ok || d != "d1" {
		t.Errorf("boundTo = %q %v", d, ok)
	}
	if b.turn("d1") != b.turn(string([]byte("d1"))) {
		t.Error("a session's claims do not share one turn")
	}
	b.prune(map[types.UID]bool{"pod-uid": true}, time.Unix(200, 0))
	b.prune(map[types.UID]bool{}, time.Unix(50, 0))
	if _, ok := b.claimed("d1"); !ok {
		t.Error("a live Pod's binding, or a recent one, was pruned")
	}
	b.prune(map[types.UID]bool{}, time.Unix(200, 0))
	if _, ok := b.claimed("d1"); ok {
		t.Error("a Pod gone for long is still the session's")
	}
	b.bind("d1", pod, true, time.Unix(100, 0))
	b.unbind("pod-uid", types.NamespacedName{Namespace: "team-a", Name: "echo-warms-abcde"})
	if _, ok := b.claimed("d1"); ok {
		t.Error("a deleted Pod is still the session's")
	}
	if _, ok := b.boundTo("pod-uid"); ok {
		t.Error("a deleted Pod is still bound")
	}
}

// A Pod bound to one session never serves another, whatever its labels say; one this
// process bound to none, or to the session itself, may.
func TestServesAnother(t *testing.T) {
	s := testExecutor(t)
	live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a", UID: "pod-uid"}}
	want := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{podcontract.LabelSessionPod: "d2"}}}
	if why := s.bindings.servesAnother(live, want); why != "" {
		t.Errorf("an unbound Pod: %q", why)
	}
	s.bindings.bind("d2", live, false, time.Unix(100, 0))
	if why := s.bindings.servesAnother(live, want); why != "" {
		t.Errorf("the session's own Pod: %q", why)
	}
	s.bindings.bind("d1", live, true, time.Unix(100, 0))
	if why := s.bindings.servesAnother(live, want); why == "" {
		t.Error("a Pod bound to another session may serve this one")
	}
}

// Only a pooled tool without a workspace keeps session pool Pods; a ClusterTool only in
// the namespaces its pool lists.
func TestPoolServes(t *testing.T) {
	body := v1alpha1.ToolBody{Image: "example/echo:1", Command: []string{"/echo"}}
	cases := []struct {
		name string
		kind v1alpha1.ToolKind
		spec v1alpha1.ToolSpec
		want bool
	}{
		{"pooled", v1alpha1.ToolKindTool, v1alpha1.ToolSpec{Body: body, WarmPool: &v1alpha1.WarmPool{Size: 1}}, true},
		{"no pool", v1alpha1.ToolKindTool, v1alpha1.ToolSpec{Body: body}, false},
		{"workspace", v1alpha1.ToolKindTool, v1alpha1.ToolSpec{Body: body, WarmPool: &v1alpha1.WarmPool{Size: 1},
			Sandbox: v1alpha1.Sandbox{Workspace: v1alpha1.WorkspaceReadWrite}}, false},
		{"cluster listed", v1alpha1.ToolKindClusterTool, v1alpha1.ToolSpec{Body: body, WarmPool: &v1alpha1.WarmPool{Size: 1, Namespaces: []string{"team-a"}}}, true},
		{"cluster unlisted", v1alpha1.ToolKindClusterTool, v1alpha1.ToolSpec{Body: body, WarmPool: &v1alpha1.WarmPool{Size: 1, Namespaces: []string{"team-b"}}}, false},
	}
	for _, c := range cases {
		call := pooledCall(&c.spec)
		call.Status.Tool.Kind = c.kind
		if got := poolServes(call); got != c.want {
			t.Errorf("%s: poolServes = %v, want %v", c.name, got, c.want)
		}
	}
}
