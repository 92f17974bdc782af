package warmexec

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor/executortest"
	"github.com/toolgate/toolgate/controllers/framekeys"
	"github.com/toolgate/toolgate/controllers/warmpool"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// pooledWorld is a call of tool t, which keeps a warm pool, and t's idle pool Pod (Ready),
// changed by mutate as someone who may patch or create Pods would have.
func pooledWorld(t *testing.T, mutate func(*corev1.Pod)) (*execWorld, *v1alpha1.Tool, *corev1.Pod) {
	t.Helper()
	w := newExecWorld(ending{})
	w.call.Status.Tool.Spec.WarmPool = &v1alpha1.WarmPool{Size: 1}
	w.call.Status.Attempts[0].StartTime = nil
	w.call.Spec.Arguments = runtime.RawExtension{Raw: []byte(`{}`)}
	tool := &v1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns", UID: "tool-uid"}}
	tool.Spec.ToolSpec = *w.call.Status.Tool.Spec
	pod := warmpool.BuildPod(warmpool.ToolPool(tool, 1), podspec.DefaultOptions())
	pod.Name, pod.UID = "t-warm-abcde", "pod-uid"
	pod.CreationTimestamp = metav1.Time{Time: w.clock.Now()} // idle for no time: not retired for that
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Tool", Name: "t",
		UID: tool.UID, Controller: ptr.To(true)}}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: podcontract.SignerContainerName, State: executortest.Running()}, {Name: podcontract.ToolContainerName, State: executortest.Running()}}
	if mutate != nil {
		mutate(pod)
	}
	w.objs = append(w.objs, tool, pod)
	return w, tool, pod
}

// A claim takes a pool Pod only when its controller owner is the call's tool with that
// tool's uid and its live spec is the one the call's snapshot builds: labels and owners are
// whatever someone who may patch Pods wrote. Any other Pod is deleted, never claimed.
func TestWarmClaimVetsThePod(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*corev1.Pod)
		claimed bool
	}{
		{name: "the tool's own Pod", claimed: true},
		{name: "owned by another object of the tool's name", mutate: func(p *corev1.Pod) { p.OwnerReferences[0].UID = "recreated-uid" }},
		{name: "another tool's image", mutate: func(p *corev1.Pod) { p.Spec.Containers[1].Image = "example/other:1" }},
		{name: "another tool's command", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[1].Command = []string{podcontract.CopiedRunner, "--", "/bin/sh", "-c", "curl evil"}
		}},
		{name: "a literal handover key", mutate: func(p *corev1.Pod) {
			env := p.Spec.Containers[0].Env
			for i := range env {
				if env[i].Name == podcontract.EnvHandoverKeys {
					env[i] = corev1.EnvVar{Name: env[i].Name, Value: executortest.OtherMasterText}
				}
			}
		}},
		{name: "a signer of another image", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "example/signer:evil" }},
		{name: "another variable", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[1].Env = append(p.Spec.Containers[1].Env, corev1.EnvVar{Name: "LD_PRELOAD", Value: "/tmp/x.so"})
		}},
		{name: "a privileged container", mutate: func(p *corev1.Pod) { p.Spec.Containers[1].SecurityContext.Privileged = ptr.To(true) }},
		{name: "root", mutate: func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsUser = ptr.To[int64](0) }},
		{name: "another runtime class", mutate: func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr.To("runc") }},
		{name: "a host path", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}},
		{name: "other resources", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[1].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("8Gi")
		}},
		{name: "an ephemeral container", mutate: func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}},
		{name: "no init container", mutate: func(p *corev1.Pod) { p.Spec.InitContainers = nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, _, pod := pooledWorld(t, tc.mutate)
			x := New(w.env(t), stubAttach{})
			where, ok := x.Claim(context.Background(), w.call, &w.call.Status.Attempts[0])
			if ok != tc.claimed {
				t.Fatalf("claim = %q, %v; want claimed %v", where, ok, tc.claimed)
			}
			got := &corev1.Pod{}
			err := x.APIReader.Get(context.Background(), client.ObjectKeyFromObject(pod), got)
			switch {
			case tc.claimed && (err != nil || got.Annotations[podcontract.AnnotationClaimedBy] != string(w.call.UID)):
				t.Fatalf("the claimed Pod: %v, annotations %v", err, got.Annotations)
			case !tc.claimed && !apierrors.IsNotFound(err):
				t.Fatalf("a Pod that is not the tool's is kept: %v, annotations %v", err, got.Annotations)
			}
		})
	}
}

// The pool's own pass retires a Pod moved into it whose spec is another body's, and
// creates the pool's own in its place.
func TestWarmPoolRetiresAPodOfAnotherSpec(t *testing.T) {
	w, tool, pod := pooledWorld(t, func(p *corev1.Pod) { p.Spec.Containers[1].Image = "example/other:1" })
	// Registered: the pool keeps its size (an unregistered Tool's pool is emptied).
	tool.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionRegistered, Status: metav1.ConditionTrue, Reason: "Test"}}
	env := w.env(t)
	r := &warmpool.Reconciler{Client: env.Client, APIReader: env.Client, Scheme: env.Scheme, Clock: w.clock, Job: podspec.DefaultOptions(),
		Keys: framekeys.New(env.Client, env.Client, w.clock)}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tool)}); err != nil {
		t.Fatal(err)
	}
	// The same pass keeps a Pod of the pool's own spec.
	_, _, own := pooledWorld(t, nil)
	if why := warmpool.PodSpecMismatch(&own.Spec, ptr.To(podspec.WarmPodSpec(&tool.Spec.ToolSpec, podspec.DefaultOptions()))); why != "" {
		t.Fatalf("the pool's own Pod mismatches: %s", why)
	}
	if err := env.Get(context.Background(), client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Pod of another spec is kept: %v", err)
	}
	pods := &corev1.PodList{}
	if err := env.List(context.Background(), pods, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	want := podspec.WarmPodSpec(&tool.Spec.ToolSpec, podspec.DefaultOptions())
	if len(pods.Items) != 1 || warmpool.PodSpecMismatch(&pods.Items[0].Spec, &want) != "" {
		t.Fatalf("the pool holds %d Pods, want its own one", len(pods.Items))
	}
}

// recordingAttach is a WarmExecutor that records the Handover line it is given.
type recordingAttach struct{ lines chan []byte }

func (r recordingAttach) Handover(_ context.Context, _ types.NamespacedName, line []byte) (WarmStream, error) {
	r.lines <- line
	return WarmStream{HandedOver: time.Now()}, nil
}

// The operator's Handover is authenticated with the namespace's master for the claimed
// Pod, the call, its attempt and digest: the runner takes it, and would take it for no
// other Pod; the runner's frame is then signed with the key the operator verifies with.
func TestWarmHandoverIsAuthenticatedForThePod(t *testing.T) {
	w, _, pod := pooledWorld(t, nil)
	attach := recordingAttach{lines: make(chan []byte, 1)}
	x := New(w.env(t), attach)
	a := &w.call.Status.Attempts[0]
	if _, ok := x.Claim(context.Background(), w.call, a); !ok {
		t.Fatal("no claim")
	}
	a.StartTime = &metav1.Time{Time: w.clock.Now()}
	if st, err := x.Start(context.Background(), w.call); err != nil || st.Refused != nil {
		t.Fatalf("start: %+v %v", st, err)
	}
	var line []byte
	select {
	case line = <-attach.lines:
	case <-time.After(10 * time.Second):
		t.Fatal("no handover")
	}
	h, err := frame.ReadHandover(bytes.NewReader(line))
	if err != nil {
		t.Fatal(err)
	}
	if h.CallUID != string(executortest.CallUID) || h.Attempt != 1 || h.ArgumentsDigest != executortest.Digest {
		t.Fatalf("handover for %s attempt %d digest %s", h.CallUID, h.Attempt, h.ArgumentsDigest)
	}
	keys := []ed25519.PublicKey{frame.HandoverPublicKey(executortest.Master)}
	if !frame.VerifyHandover(keys, string(pod.UID), h) || !bytes.Equal(h.AttemptKey, executortest.AttemptKey) {
		t.Fatal("the Pod's runner refuses the operator's handover, or it brings another attempt's key")
	}
	if frame.VerifyHandover(keys, "another-pod", h) {
		t.Fatal("the handover is taken by another Pod")
	}
}

// A pool Pod started before its call was known cannot mount the session's volume: the
// warm executor declines a workspace tool's attempt (it runs cold) and leaves the Pod idle.
func TestWarmExecutorDeclinesWorkspaceAttempts(t *testing.T) {
	for _, access := range []v1alpha1.WorkspaceAccess{v1alpha1.WorkspaceReadWrite, v1alpha1.WorkspaceReadOnly} {
		w, _, pod := pooledWorld(t, nil)
		w.call.Spec.Session = "s"
		w.call.Status.Tool.Spec.Sandbox.Workspace = access
		for _, o := range w.objs {
			if tool, ok := o.(*v1alpha1.Tool); ok {
				tool.Spec.Sandbox.Workspace = access
			}
		}
		x := New(w.env(t), stubAttach{})
		if where, ok := x.Claim(context.Background(), w.call, &w.call.Status.Attempts[0]); ok {
			t.Fatalf("%s: the warm executor claimed %q", access, where)
		}
		got := &corev1.Pod{}
		if err := x.APIReader.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil || got.Annotations[podcontract.AnnotationClaimedBy] != "" {
			t.Fatalf("%s: the pool Pod: %v, annotations %v", access, err, got.Annotations)
		}
	}
}

func TestPooledBy(t *testing.T) {
	pod := &corev1.Pod{}
	ct := &v1alpha1.ClusterTool{ObjectMeta: metav1.ObjectMeta{Name: "echo", UID: "u1"}}
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ct, v1alpha1.GroupVersion.WithKind("ClusterTool"))}
	for _, c := range []struct {
		snap v1alpha1.ToolSnapshot
		want bool
	}{
		{v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindClusterTool, Name: "echo"}, true},
		{v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "echo"}, false},
		{v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindClusterTool, Name: "other"}, false},
	} {
		if got := warmpool.PooledBy(pod, &c.snap); got != c.want {
			t.Errorf("warmpool.PooledBy(%s %s) = %v, want %v", c.snap.Kind, c.snap.Name, got, c.want)
		}
	}
	if warmpool.PooledBy(&corev1.Pod{}, &v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "echo"}) {
		t.Error("a Pod without an owner is no pool's")
	}
}
