// Command e2e measures toolgate's latency on the real local cluster (`make up`) against bare
// Kubernetes baselines, in one run, interleaved (A B C [D] A B C [D] ...):
//
//	A  a ToolCall of the example `echo` Tool (runner in the image), created as user `agent`:
//	   create -> terminal phase (result frozen), seen on a ToolCall watch opened before.
//	B  a bare Job of the same image running /tools/echo directly (no runner): create -> Job
//	   condition Complete=True on a Job watch.
//	C  a bare Pod of the same image and command: create -> a terminated container in the
//	   Pod's status on a Pod watch.
//	D  a ToolCall of an echo Tool WITHOUT runnerInImage: the init
//	   container copies the runner from the operator image first.
//	E  (diagnostic, -series ABCDE) the bare Pod of C plus the two emptyDir volumes toolgate's
//	   tool Pods mount.
//
// It prints p50/p95/max of each series and the ratios A/B and A/C; see docs/performance.md.
//
//	go run ./test/bench/e2e -n 30
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

const (
	ns         = "toolgate-demo"
	scope      = "demo"
	toolImage  = "toolgate.local/tools:dev"
	benchLabel = "toolgate.dev/bench-e2e"
	initTool   = "bench-echo-init"
)

type options struct {
	n, warmup int
	series    string
	gap       time.Duration
	timeout   time.Duration
	args      string
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 30, "samples of each series")
	flag.IntVar(&o.warmup, "warmup", 1, "unmeasured rounds first (image and page caches)")
	flag.StringVar(&o.series, "series", "ABCD", "series to run, interleaved: A ToolCall, B bare Job, C bare Pod, D ToolCall with the runner init container, E bare Pod with toolgate's two emptyDir volumes")
	flag.DurationVar(&o.gap, "gap", time.Second, "pause after each sample (after its objects' deletion was requested), plus a random 0-1s jitter so that creates do not phase-lock with the kubelet's 1 s PLEG relist")
	flag.DurationVar(&o.timeout, "timeout", 90*time.Second, "per-sample timeout")
	flag.StringVar(&o.args, "args", `{"message":"hi"}`, "the echo calls' arguments (the example echo Tool requires `message`)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-e2e:", err)
		var f failed
		if errors.As(err, &f) {
			os.Exit(1)
		}
		os.Exit(2)
	}
}

type failed struct{ n int }

func (f failed) Error() string { return fmt.Sprintf("%d samples failed", f.n) }

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return strings.TrimSpace(string(b))
	}
	return strings.Join(f[:3], " ")
}

func kubeconfig(root, env, rel string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	return filepath.Join(root, ".cluster", rel)
}

func newClient(path string) (client.WithWatch, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s (run make up first): %w", path, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return client.NewWithWatch(cfg, client.Options{Scheme: toolgatetest.NewScheme()})
}

// ---- first-seen event recorder ----

type recorder struct {
	mu    sync.Mutex
	seen  map[string]time.Time
	notes map[string]string
	chans map[string]chan struct{}
}

func newRecorder() *recorder {
	return &recorder{seen: map[string]time.Time{}, notes: map[string]string{}, chans: map[string]chan struct{}{}}
}

func (r *recorder) ch(key string) chan struct{} {
	c, ok := r.chans[key]
	if !ok {
		c = make(chan struct{})
		r.chans[key] = c
	}
	return c
}

func (r *recorder) mark(key string, t time.Time, note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.seen[key]; ok {
		return
	}
	r.seen[key], r.notes[key] = t, note
	close(r.ch(key))
}

func (r *recorder) get(key string) (time.Time, string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.seen[key]
	return t, r.notes[key], ok
}

func (r *recorder) wait(ctx context.Context, keys ...string) (string, time.Time, string, error) {
	r.mu.Lock()
	cs := make([]chan struct{}, len(keys))
	for i, k := range keys {
		cs[i] = r.ch(k)
	}
	r.mu.Unlock()
	for {
		for _, k := range keys {
			if t, n, ok := r.get(k); ok {
				return k, t, n, nil
			}
		}
		// Wait on the first key's channel or any other (small fixed set).
		select {
		case <-ctx.Done():
			return "", time.Time{}, "", ctx.Err()
		case <-cs[0]:
		case <-pick(cs, 1):
		case <-pick(cs, 2):
		}
	}
}

func pick(cs []chan struct{}, i int) chan struct{} {
	if i < len(cs) {
		return cs[i]
	}
	return nil
}

// ---- watches, opened before the first create ----

func terminatedContainer(p *corev1.Pod) (string, bool) {
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			return fmt.Sprintf("%s exit %d %s", s.Name, t.ExitCode, t.Reason), true
		}
	}
	return "", false
}

func jobCond(j *batchv1.Job, ty batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == ty && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func handle(r *recorder, obj client.Object, now time.Time) {
	switch o := obj.(type) {
	case *toolgatev1alpha1.ToolCall:
		switch o.Status.Phase {
		case toolgatev1alpha1.PhaseSucceeded, toolgatev1alpha1.PhaseFailed, toolgatev1alpha1.PhaseDenied:
			note := string(o.Status.Phase)
			if o.Status.Result != nil && o.Status.Result.Reason != "" {
				note += "/" + o.Status.Result.Reason
			}
			r.mark("tc/"+o.Name+"/terminal", now, note)
		}
	case *batchv1.Job:
		if call := o.Labels[controllers.LabelCall]; call != "" {
			r.mark("tc/"+call+"/job", now, o.Name)
			if jobCond(o, batchv1.JobComplete) {
				r.mark("tc/"+call+"/job-complete", now, "")
			}
			return
		}
		if o.Labels[benchLabel] == "" {
			return
		}
		if jobCond(o, batchv1.JobComplete) {
			r.mark("job/"+o.Name+"/done", now, "Complete")
		}
		if jobCond(o, batchv1.JobFailed) {
			r.mark("job/"+o.Name+"/failed", now, "Failed")
		}
	case *corev1.Pod:
		note, term := terminatedContainer(o)
		if call := o.Labels[controllers.LabelCall]; call != "" {
			r.mark("tc/"+call+"/pod", now, o.Name)
			if term {
				r.mark("tc/"+call+"/pod-term", now, note)
			}
			return
		}
		if o.Labels[benchLabel] == "" {
			return
		}
		key := "pod/" + o.Name
		if j := o.Labels["batch.kubernetes.io/job-name"]; j != "" {
			key = "job/" + j
		}
		if term {
			r.mark(key+"/pod-term", now, note)
		}
	}
}

// watchLoop lists (for a resourceVersion) then watches, reopening from the last seen
// version when the server closes the watch. ready is closed once the first watch is open.
func watchLoop(ctx context.Context, c client.WithWatch, list client.ObjectList, r *recorder, ready chan<- struct{}) error {
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return err
	}
	rv := list.(metav1.ListInterface).GetResourceVersion()
	first := true
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, list, client.InNamespace(ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		if err != nil {
			if first {
				return err
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if first {
			close(ready)
			first = false
		}
		for ev := range w.ResultChan() {
			now := time.Now()
			if ev.Type == watch.Error {
				// Most likely 410 Gone: re-list for a fresh version.
				if err := c.List(ctx, list, client.InNamespace(ns)); err == nil {
					rv = list.(metav1.ListInterface).GetResourceVersion()
				}
				break
			}
			obj, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			rv = obj.GetResourceVersion()
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				handle(r, obj, now)
			}
		}
		w.Stop()
	}
	return nil
}

// ---- objects ----

func podSpec() corev1.PodSpec {
	sc := &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Privileged:               ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	return corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr.To[int64](5),
		AutomountServiceAccountToken:  ptr.To(false),
		EnableServiceLinks:            ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](65532),
			RunAsGroup:     ptr.To[int64](65532),
			FSGroup:        ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:            "echo",
			Image:           toolImage,
			ImagePullPolicy: corev1.PullNever,
			Command:         []string{"/tools/echo"},
			SecurityContext: sc,
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			},
		}},
	}
}

// ---- samples ----

type sample struct {
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
	s := sample{series: series, parts: map[string]time.Duration{}}
	tc := toolgatetest.MakeToolCall("", ns).Tool(tool).Scope(scope).Requester("agent").Args(b.args).Obj()
	tc.GenerateName = "bench-" + strings.ToLower(series) + "-"
	tc.Labels = b.labels()
	t0 := time.Now()
	if err := b.agent.Create(ctx, tc); err != nil {
		s.err = fmt.Errorf("create ToolCall: %w", err)
		return s
	}
	defer b.del(tc)
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
		// The two emptyDirs toolgate's tool Pods mount (controllers/job.go).
		p.GenerateName = "bench-e-"
		p.Spec.Volumes = []corev1.Volume{
			{Name: "toolgate-run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
			{Name: "toolgate-run", MountPath: "/var/run/toolgate"}, {Name: "tmp", MountPath: "/tmp"},
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
		if !strings.ContainsRune("ABCDE", r) {
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
	loadAfter := loadavg()
	report(res, series, loadBefore, loadAfter, time.Since(start))
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

// ---- report ----

type stats struct {
	n             int
	p50, p95, max time.Duration
}

func pct(ds []time.Duration, p float64) time.Duration {
	// nearest rank
	i := int(p*float64(len(ds))+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(ds) {
		i = len(ds) - 1
	}
	return ds[i]
}

func summarize(ds []time.Duration) stats {
	if len(ds) == 0 {
		return stats{}
	}
	ds = append([]time.Duration(nil), ds...)
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return stats{n: len(ds), p50: pct(ds, 0.50), p95: pct(ds, 0.95), max: ds[len(ds)-1]}
}

func sec(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

func report(res map[string][]sample, series []string, loadBefore, loadAfter string, elapsed time.Duration) {
	names := map[string]string{
		"A": "ToolCall echo (runnerInImage): create -> terminal phase",
		"B": "bare Job /tools/echo: create -> Job Complete",
		"C": "bare Pod /tools/echo: create -> container terminated",
		"D": "ToolCall echo (init container): create -> terminal phase",
		"E": "bare Pod + toolgate's 2 emptyDirs: -> terminated",
	}
	st := map[string]stats{}
	fmt.Printf("\n%-3s %-58s %5s %8s %8s %8s\n", "", "series", "ok", "p50", "p95", "max")
	for _, s := range series {
		var ds []time.Duration
		for _, sm := range res[s] {
			if sm.err == nil {
				ds = append(ds, sm.d)
			}
		}
		st[s] = summarize(ds)
		fmt.Printf("%-3s %-58s %2d/%-2d %8s %8s %8s\n", s, names[s], st[s].n, len(res[s]), sec(st[s].p50), sec(st[s].p95), sec(st[s].max))
	}
	// Breakdowns (from create).
	fmt.Println("\nbreakdown, p50 from create:")
	for _, s := range series {
		keys := map[string][]time.Duration{}
		for _, sm := range res[s] {
			if sm.err != nil {
				continue
			}
			for k, d := range sm.parts {
				keys[k] = append(keys[k], d)
			}
		}
		var parts []string
		for _, k := range []string{"job", "pod", "pod-term", "job-complete"} {
			if ds := keys[k]; len(ds) > 0 {
				x := summarize(ds)
				parts = append(parts, fmt.Sprintf("%s %s (p95 %s)", k, sec(x.p50), sec(x.p95)))
			}
		}
		if len(parts) > 0 {
			fmt.Printf("  %s: %s; end %s\n", s, strings.Join(parts, ", "), sec(st[s].p50))
		}
	}
	ratio := func(a, b time.Duration) string {
		if b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2fx", float64(a)/float64(b))
	}
	a, bb, c := st["A"], st["B"], st["C"]
	fmt.Printf("\nA/B: p50 %s, p95 %s\n", ratio(a.p50, bb.p50), ratio(a.p95, bb.p95))
	fmt.Printf("A/C: p50 %s, p95 %s\n", ratio(a.p50, c.p50), ratio(a.p95, c.p95))
	if d, ok := st["D"]; ok && d.n > 0 {
		fmt.Printf("D-A (init container cost): p50 %+.3fs, p95 %+.3fs; D/C p50 %s\n",
			(d.p50 - a.p50).Seconds(), (d.p95 - a.p95).Seconds(), ratio(d.p50, c.p50))
	}
	if c.n > 0 && a.n > 0 {
		p50ok := float64(a.p50) <= 1.10*float64(c.p50)
		p95ok := float64(a.p95) <= 1.20*float64(c.p95)
		fmt.Printf("target (A p50 <= 1.1x C p50; A p95 <= 1.2x C p95): p50 %s, p95 %s\n", verdict(p50ok), verdict(p95ok))
	}
	fmt.Printf("\nload average (1/5/15 min): before %s, after %s; %s elapsed\n", loadBefore, loadAfter, elapsed.Round(time.Second))
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
