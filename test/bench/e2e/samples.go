package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

type sample struct {
	name   string // the ToolCall's, for series A, D and W
	series string
	d      time.Duration
	parts  map[string]time.Duration // breakdown from create
	err    error
}

type bench struct {
	o            options
	admin, agent client.WithWatch
	rec          *recorder
	runID        string
	args         json.RawMessage
}

func (b *bench) labels() map[string]string { return map[string]string{benchLabel: b.runID} }

func (b *bench) del(obj client.Object) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = client.IgnoreNotFound(b.admin.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)))
}

func (b *bench) call(ctx context.Context, series, tool, scope string) sample {
	return b.callIn(ctx, series, tool, scope, "")
}

// callIn is call, in a session ("": none).
func (b *bench) callIn(ctx context.Context, series, tool, scope, session string) sample {
	s := sample{series: series, parts: map[string]time.Duration{}}
	tc := toolgatetest.MakeToolCall("", ns).Tool(tool).Scope(scope).Requester("agent").Args(b.args).Obj()
	tc.Spec.Session = session
	tc.GenerateName = "bench-" + strings.ToLower(series) + "-"
	tc.Labels = b.labels()
	t0 := time.Now()
	if err := b.agent.Create(ctx, tc); err != nil {
		s.err = fmt.Errorf("create ToolCall: %w", err)
		return s
	}
	s.name = tc.Name
	defer b.del(tc)
	if series == "W" || series == "V" {
		defer func() { b.ranWarmCheck(tc.Name, &s) }() // before the delete (defers run last first)
	}
	if series == "Q" {
		defer func() { b.claimedCheck(tc.Name, &s) }()
	}
	_, t, note, err := b.rec.wait(ctx, "tc/"+tc.Name+"/terminal")
	if err != nil {
		s.err = fmt.Errorf("ToolCall %s: no terminal phase: %w", tc.Name, err)
		return s
	}
	if !strings.HasPrefix(note, string(toolgatev1alpha1.PhaseSucceeded)) {
		s.err = fmt.Errorf("ToolCall %s ended %s", tc.Name, note)
		return s
	}
	s.d = t.Sub(t0)
	for _, k := range []string{"job", "pod", "pod-term", "job-complete"} {
		if tk, _, ok := b.rec.get("tc/" + tc.Name + "/" + k); ok {
			s.parts[k] = tk.Sub(t0)
		}
	}
	return s
}

func (b *bench) job(ctx context.Context) sample {
	s := sample{series: "B", parts: map[string]time.Duration{}}
	spec := podSpec()
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-b-", Namespace: ns, Labels: b.labels()},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template:     corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: b.labels()}, Spec: spec},
		},
	}
	t0 := time.Now()
	if err := b.admin.Create(ctx, j); err != nil {
		s.err = fmt.Errorf("create Job: %w", err)
		return s
	}
	defer b.del(j)
	k, t, _, err := b.rec.wait(ctx, "job/"+j.Name+"/done", "job/"+j.Name+"/failed")
	if err != nil {
		s.err = fmt.Errorf("job %s: %w", j.Name, err)
		return s
	}
	if strings.HasSuffix(k, "/failed") {
		s.err = fmt.Errorf("job %s failed", j.Name)
		return s
	}
	s.d = t.Sub(t0)
	if tk, _, ok := b.rec.get("job/" + j.Name + "/pod-term"); ok {
		s.parts["pod-term"] = tk.Sub(t0)
	}
	return s
}

func (b *bench) pod(ctx context.Context, volumes bool) sample {
	s := sample{series: "C", parts: map[string]time.Duration{}}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-c-", Namespace: ns, Labels: b.labels()}, Spec: podSpec()}
	if volumes {
		// The two emptyDirs toolgate's tool Pods mount (internal/podspec).
		p.GenerateName = "bench-e-"
		p.Spec.Volumes = []corev1.Volume{
			{Name: podcontract.RunVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
			{Name: podcontract.RunVolume, MountPath: podcontract.RunMountPath}, {Name: "tmp", MountPath: "/tmp"},
		}
	}
	t0 := time.Now()
	if err := b.admin.Create(ctx, p); err != nil {
		s.err = fmt.Errorf("create Pod: %w", err)
		return s
	}
	defer b.del(p)
	_, t, note, err := b.rec.wait(ctx, "pod/"+p.Name+"/pod-term")
	if err != nil {
		s.err = fmt.Errorf("pod %s: %w", p.Name, err)
		return s
	}
	if !strings.Contains(note, "exit 0") {
		s.err = fmt.Errorf("pod %s: %s", p.Name, note)
		return s
	}
	s.d = t.Sub(t0)
	return s
}

func (b *bench) one(series string) sample {
	ctx, cancel := context.WithTimeout(context.Background(), b.o.timeout)
	defer cancel()
	switch series {
	case "A":
		return b.call(ctx, "A", "echo", scope)
	case "B":
		return b.job(ctx)
	case "C":
		return b.pod(ctx, false)
	case "E":
		return b.pod(ctx, true)
	case "W":
		return b.warmSample(ctx)
	case "K":
		return b.call(ctx, "K", "echo", queueScope)
	case "V":
		return b.queuedWarmSample(ctx)
	case "G":
		return b.call(ctx, "G", gvisorTool, "")
	case "S", "P", "N":
		return b.workspaceSample(ctx, series)
	case "X", "Y":
		return b.sessionSample(ctx, series)
	case "Z":
		return b.execSample(ctx)
	case "Q":
		return b.sessionPoolSample(ctx)
	default:
		return b.call(ctx, "D", initTool, "")
	}
}

func run(o options) error {
	root, err := toolgatetest.ModuleRoot()
	if err != nil {
		return err
	}
	b := &bench{o: o, rec: newRecorder(), runID: fmt.Sprintf("%d", time.Now().Unix()), args: json.RawMessage(o.args)}
	if b.admin, err = newClient(kubeconfig(root, "TOOLGATE_KUBECONFIG_ADMIN", "kubeconfig")); err != nil {
		return err
	}
	if b.agent, err = newClient(kubeconfig(root, "TOOLGATE_KUBECONFIG_AGENT", "kubeconfigs/agent.kubeconfig")); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	loadBefore := loadavg()
	fmt.Printf("bench-e2e: n=%d per series, interleaved, warmup %d round(s), gap %s, load before: %s\n", o.n, o.warmup, o.gap, loadBefore)

	var series []string
	for _, r := range o.series {
		if !strings.ContainsRune("ABCDEGKVWSPNXYZQ", r) {
			return fmt.Errorf("-series: unknown series %q", r)
		}
		series = append(series, string(r))
	}
	if strings.Contains(o.series, "D") {
		t := toolgatetest.MakeTool(initTool, ns).Image(toolImage).Command("/tools/echo").Timeout(10 * time.Second).Obj()
		t.Spec.Body.Resources = podSpec().Containers[0].Resources
		t.Labels = b.labels()
		_ = client.IgnoreNotFound(b.admin.Delete(ctx, t))
		time.Sleep(500 * time.Millisecond)
		if err := b.admin.Create(ctx, t); err != nil {
			return fmt.Errorf("create Tool %s: %w", initTool, err)
		}
		defer b.del(t)
		if err := waitRegistered(ctx, b.admin, initTool); err != nil {
			return err
		}
	}

	if strings.Contains(o.series, "G") {
		undo, err := b.createGvisorTool(ctx)
		if err != nil {
			return err
		}
		defer undo()
	}

	if strings.ContainsAny(o.series, "SPN") {
		undo, err := b.createWorkspaceTools(ctx)
		if err != nil {
			return err
		}
		defer undo()
	}

	if strings.ContainsAny(o.series, "XYZQ") || o.concurrent > 0 {
		undo, err := b.createSessionTools(ctx)
		if err != nil {
			return err
		}
		defer undo()
	}

	if strings.ContainsAny(o.series, "KV") {
		undo, err := b.createQueueScope(ctx, o.queue)
		if err != nil {
			return err
		}
		defer undo()
	}

	if strings.Contains(o.series, "Q") {
		undo, err := b.createPooledEcho(ctx, sxPooled, sxScope, int32(o.pool))
		if err != nil {
			return err
		}
		defer undo()
	}

	if strings.ContainsAny(o.series, "WV") || o.burst > 0 {
		undo, err := b.createWarmTool(ctx, int32(o.pool))
		if err != nil {
			return err
		}
		defer undo()
	}

	for _, l := range []client.ObjectList{&toolgatev1alpha1.ToolCallList{}, &batchv1.JobList{}, &corev1.PodList{}} {
		ready := make(chan struct{})
		errc := make(chan error, 1)
		go func() { errc <- watchLoop(ctx, b.admin, l, b.rec, ready) }()
		select {
		case <-ready:
		case err := <-errc:
			return fmt.Errorf("watch %T: %w", l, err)
		case <-time.After(30 * time.Second):
			return fmt.Errorf("watch %T: not open after 30s", l)
		}
	}

	res := map[string][]sample{}
	nfail := 0
	start := time.Now()
	for round := -o.warmup; round < o.n; round++ {
		for _, s := range series {
			sm := b.one(s)
			if sm.err != nil {
				nfail++
				fmt.Fprintf(os.Stderr, "round %d %s: %v\n", round, s, sm.err)
			}
			if round >= 0 {
				res[s] = append(res[s], sm)
			}
			time.Sleep(o.gap + time.Duration(rand.Int64N(int64(time.Second))))
		}
		if round >= 0 && (round+1)%5 == 0 {
			fmt.Fprintf(os.Stderr, "  %d/%d rounds (%s)\n", round+1, o.n, time.Since(start).Round(time.Second))
		}
	}
	var burst []time.Duration
	burstFails := 0
	if o.burst > 0 {
		loadBurst := loadavg()
		burst, burstFails, err = b.burst(ctx, o.burst, o.burstRounds)
		if err != nil {
			fmt.Fprintf(os.Stderr, "burst: %v\n", err)
			nfail++
		}
		fmt.Printf("burst: load before %s, after %s\n", loadBurst, loadavg())
	}
	var conc []time.Duration
	concFails := 0
	if o.concurrent > 0 {
		loadConc := loadavg()
		conc, concFails = b.concurrent(ctx, o.concurrent, o.concurrentRounds)
		nfail += concFails
		fmt.Printf("concurrent: load before %s, after %s\n", loadConc, loadavg())
	}
	loadAfter := loadavg()
	report(res, series, loadBefore, loadAfter, time.Since(start))
	reportWarm(res, burst, burstFails, o.burst)
	reportWorkspace(res)
	reportSession(res, conc, concFails, o.concurrent, b.rec.counted())
	reportSessionPool(res)
	if nfail > 0 {
		return failed{nfail}
	}
	return nil
}

func waitRegistered(ctx context.Context, c client.Client, name string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var t toolgatev1alpha1.Tool
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &t); err == nil {
			for _, cd := range t.Status.Conditions {
				if cd.Type == toolgatev1alpha1.ConditionRegistered && cd.Status == metav1.ConditionTrue {
					return nil
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("tool %s not registered after 30s", name)
}
