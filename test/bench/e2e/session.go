package main

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Series X, Y and Z (issue 32): X a session call — the example echo Tool copied into a
// scope that declares session sandboxes, every sample in one session, so that after the
// warm-up round each runs in the session's running Pod; Y the same under gVisor (its own
// session); Z a bare exec (client-go remotecommand, WebSocket) of /tools/echo, the
// arguments on stdin, into a running Pod of the echo Pod spec: what Kubernetes itself
// charges for one command in a running container. With -concurrent K, after the series:
// rounds of K concurrent calls of a ReadOnly workspace copy in one session.

const (
	sxScope  = "bench-sx"
	sxTool   = "bench-echo-sx"
	sxGvisor = "bench-echo-sx-gv"
	sxRO     = "bench-echo-sx-ro"
	execPod  = "bench-exec"
)

// createSessionTools makes the session scope, the three echo copies and (for Z) the exec
// Pod, and returns their removal.
func (b *bench) createSessionTools(ctx context.Context) (func(), error) {
	var src toolgatev1alpha1.Tool
	if err := b.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "echo"}, &src); err != nil {
		return nil, fmt.Errorf("example echo Tool: %w", err)
	}
	scope := toolgatetest.MakeToolScope(sxScope, ns).Subjects("agent").Workspace("64Mi", 10*time.Minute).SessionSandbox(10 * time.Minute).Obj()
	scope.Labels = b.labels()
	objs := []client.Object{scope}
	for _, name := range []string{sxTool, sxGvisor, sxRO} {
		t := &toolgatev1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: b.labels()}}
		t.Spec = *src.Spec.DeepCopy()
		t.Spec.Name, t.Spec.Scope = "", sxScope
		switch name {
		case sxGvisor:
			t.Spec.Sandbox.RuntimeClassName = ptr.To("gvisor")
			if t.Spec.Body.Resources.Limits == nil {
				t.Spec.Body.Resources.Limits = corev1.ResourceList{}
			}
			t.Spec.Body.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
		case sxRO:
			t.Spec.Sandbox.Workspace = toolgatev1alpha1.WorkspaceReadOnly
		}
		objs = append(objs, t)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: execPod, Namespace: ns, Labels: b.labels()}, Spec: podSpec()}
	pod.Spec.Containers[0].Command = []string{"/bin/busybox", "sleep", "3600"}
	objs = append(objs, pod)
	for _, o := range objs {
		_ = client.IgnoreNotFound(b.admin.Delete(ctx, o))
	}
	time.Sleep(2 * time.Second) // the old exec Pod's grace period (the bench's own setup)
	for _, o := range objs {
		if err := b.admin.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	for _, name := range []string{sxTool, sxGvisor, sxRO} {
		if err := waitRegistered(ctx, b.admin, name); err != nil {
			return nil, err
		}
	}
	if err := b.execSetup(); err != nil {
		return nil, err
	}
	return func() {
		for _, o := range objs {
			b.del(o)
		}
	}, nil
}

var execClient struct {
	cs  kubernetes.Interface
	cfg *rest.Config
}

// execSetup builds the clientset series Z execs with.
func (b *bench) execSetup() error {
	root, err := toolgatetest.ModuleRoot()
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig(root, "TOOLGATE_KUBECONFIG_ADMIN", "kubeconfig"))
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	execClient.cs, execClient.cfg = cs, cfg
	return nil
}

// execSample is one sample of Z: exec /tools/echo with the arguments on stdin into the
// running exec Pod; create of the exec request → its stdout complete and the stream ended.
func (b *bench) execSample(ctx context.Context) sample {
	s := sample{series: "Z", parts: map[string]time.Duration{}}
	req := execClient.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(execPod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "echo", Command: []string{"/tools/echo"}, Stdin: true, Stdout: true, Stderr: true},
			scheme.ParameterCodec)
	t0 := time.Now()
	ex, err := remotecommand.NewWebSocketExecutor(execClient.cfg, "GET", req.URL().String())
	if err != nil {
		s.err = err
		return s
	}
	var out, errOut bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: bytes.NewReader(b.args), Stdout: &out, Stderr: &errOut}); err != nil {
		s.err = fmt.Errorf("exec: %w (%s)", err, errOut.String())
		return s
	}
	s.d = time.Since(t0)
	if !strings.Contains(out.String(), "hi") && len(out.Bytes()) == 0 {
		s.err = fmt.Errorf("exec: no output (%s)", errOut.String())
	}
	return s
}

// sessionSample is one sample of X or Y.
func (b *bench) sessionSample(ctx context.Context, series string) sample {
	if series == "Y" {
		return b.callIn(ctx, "Y", sxGvisor, sxScope, "bench-sx-gv-"+b.runID)
	}
	return b.callIn(ctx, "X", sxTool, sxScope, "bench-sx-"+b.runID)
}

// concurrent runs rounds of k concurrent ReadOnly calls in one session (its Pod started by
// an unmeasured call first) and returns every call's create → terminal.
func (b *bench) concurrent(ctx context.Context, k, rounds int) ([]time.Duration, int) {
	session := "bench-sx-ro-" + b.runID
	_ = b.callIn(ctx, "R", sxRO, sxScope, session)
	var mu sync.Mutex
	var ds []time.Duration
	fails := 0
	for range rounds {
		var wg sync.WaitGroup
		for range k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cctx, cancel := context.WithTimeout(ctx, b.o.timeout)
				defer cancel()
				sm := b.callIn(cctx, "R", sxRO, sxScope, session)
				mu.Lock()
				defer mu.Unlock()
				if sm.err != nil {
					fails++
					return
				}
				ds = append(ds, sm.d)
			}()
		}
		wg.Wait()
		time.Sleep(b.o.gap)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds, fails
}

func reportSession(res map[string][]sample, conc []time.Duration, concFails, k int, writes map[string]int) {
	x := okDurations(res["X"])
	if len(x) > 0 {
		sx := summarize(x)
		for _, s := range []struct{ series, what string }{{"Y", "session call under gVisor"}, {"Z", "bare exec into a running Pod"}, {"A", "cold ToolCall"}} {
			d := okDurations(res[s.series])
			if len(d) == 0 {
				continue
			}
			ss := summarize(d)
			fmt.Printf("X/%s (%s): X p50 %s p95 %s; %s p50 %s p95 %s; X/%s at p50 %.2fx\n", s.series, s.what,
				sec(sx.p50), sec(sx.p95), s.series, sec(ss.p50), sec(ss.p95), s.series, float64(sx.p50)/float64(max(ss.p50, 1)))
		}
	}
	if len(conc) > 0 {
		sc := summarize(conc)
		fmt.Printf("R %d concurrent ReadOnly calls in one session: p50 %s, p95 %s, max %s, %d failed\n", k, sec(sc.p50), sec(sc.p95), sec(sc.max), concFails)
	}
	for _, series := range []string{"A", "X", "Y"} {
		var n, total int
		for _, s := range res[series] {
			if c, ok := writes[s.name]; ok && s.err == nil {
				n++
				total += c
			}
		}
		if n > 0 {
			fmt.Printf("%s: %.1f ToolCall writes seen on the watch per call (create and status writes)\n", series, float64(total)/float64(n))
		}
	}
}
