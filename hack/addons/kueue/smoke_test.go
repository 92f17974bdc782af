// Package kueue holds the smoke test of the local cluster's Kueue add-on (hack/addons/kueue.sh):
// the manager built from Go modules, run as a host process against a throwaway envtest API
// server, admits suspended Jobs by the quota of a ClusterQueue. No kubelet: admission is all it
// shows. Skipped unless KUEUE_SMOKE=1 (it builds Kueue on first use: minutes).
//
//	KUEUE_SMOKE=1 go test -v -count=1 ./hack/addons/kueue/
package kueue

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

const (
	queueLabel = "kueue.x-k8s.io/queue-name"
	namespace  = "smoke"
	// nominalCPU is the ClusterQueue's cpu quota; each burst Job asks for one cpu.
	nominalCPU = 2
	burst      = 5
)

var kueueGroup = schema.GroupVersion{Group: "kueue.x-k8s.io", Version: "v1beta2"}

func TestKueueAdmitsSuspendedJobs(t *testing.T) {
	if os.Getenv("KUEUE_SMOKE") != "1" {
		t.Skip("set KUEUE_SMOKE=1 to build Kueue and run it against envtest")
	}
	root, err := toolgatetest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	assets, err := toolgatetest.AssetsDirectory("")
	if err != nil {
		t.Fatal(err)
	}
	ctrllog.SetLogger(logr.Discard()) // the client's own logs are not what this test reads
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	// The build first, outside the timed part (cached after the first run).
	script := filepath.Join(root, "hack", "addons", "kueue.sh")
	run(ctx, t, nil, script, "build")

	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	dir := t.TempDir()
	admin := kubeconfig(t, env, dir, envtest.User{Name: "smoke-admin", Groups: []string{"system:masters"}})
	// The manager runs as system:kueue with no group: only the rendered RBAC lets it work.
	manager := kubeconfig(t, env, dir, envtest.User{Name: "system:kueue"})
	scriptEnv := []string{
		"KUEUE_ADMIN_KUBECONFIG=" + admin,
		"KUEUE_KUBECONFIG=" + manager,
		"KUEUE_STATE=" + filepath.Join(dir, "state"),
		"KUEUE_CA_DIR=" + filepath.Join(dir, "no-ca"),
		"KUBECTL=" + filepath.Join(assets, "kubectl"),
	}
	start := time.Now()
	out := run(ctx, t, scriptEnv, script, "start")
	t.Logf("start (apply CRDs and RBAC, manager to /readyz and its Job controller running): %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		run(context.Background(), t, scriptEnv, script, "stop")
		if t.Failed() {
			if log, err := os.ReadFile(filepath.Join(dir, "state", "kueue.log")); err == nil {
				t.Logf("kueue log, errors:\n%s", errorLines(string(log), 20))
				kept := filepath.Join(os.TempDir(), "kueue-smoke-failed.log")
				if os.WriteFile(kept, log, 0o600) == nil {
					t.Logf("kueue log kept in %s", kept)
				}
			}
		}
	})
	t.Log(strings.TrimSpace(out))

	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	must(t, c.Create(ctx, kueueObject("ResourceFlavor", "", "default", map[string]any{})))
	must(t, c.Create(ctx, kueueObject("ClusterQueue", "", "node", map[string]any{
		"namespaceSelector": map[string]any{},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{"cpu", "memory"},
			"flavors": []any{map[string]any{
				"name": "default",
				"resources": []any{
					map[string]any{"name": "cpu", "nominalQuota": fmt.Sprint(nominalCPU)},
					map[string]any{"name": "memory", "nominalQuota": "4Gi"},
				},
			}},
		}},
	})))
	must(t, c.Create(ctx, kueueObject("LocalQueue", namespace, "tools", map[string]any{"clusterQueue": "node"})))
	// Queues first, Jobs after, as `make up` will order them. Created all within milliseconds
	// of the manager's start, the first Job once stayed suspended for 60 s (1 run in 11; not
	// diagnosed, the log was not kept; since this wait, 0 in 5).
	waitFor(ctx, t, "the ClusterQueue and LocalQueue active", func() bool {
		return active(ctx, t, c, "ClusterQueue", "", "node") && active(ctx, t, c, "LocalQueue", namespace, "tools")
	})

	// One Job: created suspended and labelled, as toolgate will create them.
	created := time.Now()
	must(t, c.Create(ctx, job("one", "500m")))
	waitFor(ctx, t, "the Job admitted (unsuspended)", func() bool { return !suspended(ctx, t, c, "one") })
	admitted := time.Since(created)
	wl := workloadOf(ctx, t, c, "one")
	t.Logf("first Job (right after start): create -> unsuspended %v (workload %s)", admitted.Round(time.Millisecond), wl)
	if wl == "" {
		t.Fatal("the Job was unsuspended but no Workload owns it")
	}

	// The first Job ends (as the Job controller would mark it), freeing its quota; a second
	// one shows the admission latency once Kueue's caches are warm.
	finish(ctx, t, c, "one")
	waitFor(ctx, t, "the first Job's Workload finished", func() bool { return workloadFinished(ctx, t, c, "one") })
	created = time.Now()
	must(t, c.Create(ctx, job("two", "500m")))
	waitFor(ctx, t, "the second Job admitted (unsuspended)", func() bool { return !suspended(ctx, t, c, "two") })
	t.Logf("second Job: create -> unsuspended %v", time.Since(created).Round(time.Millisecond))
	finish(ctx, t, c, "two")
	waitFor(ctx, t, "the second Job's Workload finished", func() bool { return workloadFinished(ctx, t, c, "two") })

	// A burst over the quota: two one-cpu Jobs fit, the rest wait suspended in the queue
	// instead of failing.
	created = time.Now()
	for i := range burst {
		must(t, c.Create(ctx, job(fmt.Sprintf("burst-%d", i), "1")))
	}
	running := func() int {
		n := 0
		for i := range burst {
			if !suspended(ctx, t, c, fmt.Sprintf("burst-%d", i)) {
				n++
			}
		}
		return n
	}
	waitFor(ctx, t, fmt.Sprintf("%d burst Jobs admitted", nominalCPU), func() bool { return running() == nominalCPU })
	t.Logf("burst of %d one-cpu Jobs: %d admitted after %v", burst, nominalCPU, time.Since(created).Round(time.Millisecond))
	// No more than the quota is admitted while the admitted ones run.
	gomega.NewWithT(t).Consistently(running).WithContext(ctx).WithTimeout(2*time.Second).WithPolling(100*time.Millisecond).
		Should(gomega.Equal(nominalCPU), "burst Jobs unsuspended beyond the ClusterQueue's cpu")
	for i := range burst {
		if workloadOf(ctx, t, c, fmt.Sprintf("burst-%d", i)) == "" {
			t.Fatalf("burst-%d has no Workload: it is not queued", i)
		}
	}
	// An admitted Job that ends frees its quota: the next queued one is admitted.
	for i := range burst {
		if name := fmt.Sprintf("burst-%d", i); !suspended(ctx, t, c, name) {
			finish(ctx, t, c, name)
			break
		}
	}
	freed := time.Now()
	waitFor(ctx, t, "the next queued Job admitted", func() bool { return running() == nominalCPU+1 })
	t.Logf("a queued Job admitted %v after an admitted one ended", time.Since(freed).Round(time.Millisecond))
}

// finish marks a Job succeeded, as the Job controller does (there is none in envtest).
func finish(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	var j batchv1.Job
	must(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &j))
	now := metav1.Now()
	j.Status.StartTime, j.Status.CompletionTime, j.Status.Succeeded = &now, &now, 1
	j.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	must(t, c.Status().Update(ctx, &j))
}

// active: the Kueue object carries Active=True.
func active(ctx context.Context, t *testing.T, c client.Client, kind, ns, name string) bool {
	t.Helper()
	u := kueueObject(kind, ns, name, nil)
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u))
	return hasTrueCondition(u, "Active")
}

func hasTrueCondition(u *unstructured.Unstructured, condType string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == condType && m["status"] == "True" {
			return true
		}
	}
	return false
}

// workloadFinished: the Job's Workload carries Finished=True (its quota is released).
func workloadFinished(ctx context.Context, t *testing.T, c client.Client, jobName string) bool {
	t.Helper()
	name := workloadOf(ctx, t, c, jobName)
	if name == "" {
		return false
	}
	wl := &unstructured.Unstructured{}
	wl.SetGroupVersionKind(kueueGroup.WithKind("Workload"))
	must(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, wl))
	return hasTrueCondition(wl, "Finished")
}

func kubeconfig(t *testing.T, env *envtest.Environment, dir string, u envtest.User) string {
	t.Helper()
	user, err := env.AddUser(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strings.ReplaceAll(u.Name, ":", "-")+".kubeconfig")
	must(t, os.WriteFile(path, b, 0o600))
	return path
}

func run(ctx context.Context, t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func kueueObject(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(kueueGroup.WithKind(kind))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func job(name, cpu string) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name, Labels: map[string]string{queueLabel: "tools"},
	}}
	j.Spec = batchv1.JobSpec{
		Suspend:      ptr.To(true),
		BackoffLimit: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "tool", Image: "toolgate.local/smoke:dev",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse(cpu),
					corev1.ResourceMemory: resource.MustParse("64Mi"),
				}},
			}},
		}},
	}
	return j
}

func suspended(ctx context.Context, t *testing.T, c client.Client, name string) bool {
	t.Helper()
	var j batchv1.Job
	must(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &j))
	return ptr.Deref(j.Spec.Suspend, false)
}

// workloadOf: the name of the Workload a Job owns, "" when there is none.
func workloadOf(ctx context.Context, t *testing.T, c client.Client, jobName string) string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kueueGroup.WithKind("WorkloadList"))
	must(t, c.List(ctx, list, client.InNamespace(namespace)))
	for _, wl := range list.Items {
		for _, ref := range wl.GetOwnerReferences() {
			if ref.Kind == "Job" && ref.Name == jobName && wl.GetDeletionTimestamp() == nil {
				return wl.GetName()
			}
		}
	}
	return ""
}

func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	gomega.NewWithT(t).Eventually(cond).WithContext(ctx).WithTimeout(60*time.Second).WithPolling(50*time.Millisecond).
		Should(gomega.BeTrue(), "timed out waiting for %s", what)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// errorLines: the first n lines of the manager's log that mention an error.
func errorLines(log string, n int) string {
	var out []string
	for line := range strings.Lines(log) {
		if strings.Contains(strings.ToLower(line), "error") && len(out) < n {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, "\n")
}
