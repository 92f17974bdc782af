package startgate

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func scope(name, parent string, a *v1alpha1.Admission) *v1alpha1.ToolScope {
	return &v1alpha1.ToolScope{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "agents"},
		Spec: v1alpha1.ToolScopeSpec{Parent: parent, Admission: a}}
}

func TestResolve(t *testing.T) {
	wait := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	scopes := []client.Object{
		scope("root", "", &v1alpha1.Admission{QueueName: "root-q", MaxWait: wait(time.Minute)}),
		scope("team", "root", nil), // inherits root's
		scope("wait-only", "root", &v1alpha1.Admission{MaxWait: wait(2 * time.Second)}), // nearest wins: no queue there
		scope("plain", "", nil),
	}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(scopes...).Build()
	for _, tc := range []struct {
		name, scope string
		opts        Options
		want        *podspec.Admission
	}{
		{name: "no scope, no flags", opts: DefaultOptions()},
		{name: "no scope, flag queue", opts: Options{Queue: "q", MaxWait: time.Minute}, want: &podspec.Admission{Queue: "q", MaxWait: time.Minute}},
		{name: "own scope declares", scope: "root", opts: DefaultOptions(), want: &podspec.Admission{Queue: "root-q", MaxWait: time.Minute}},
		{name: "parent declares", scope: "team", opts: DefaultOptions(), want: &podspec.Admission{Queue: "root-q", MaxWait: time.Minute}},
		{name: "nearest declaration without a queue: the flag's queue", scope: "wait-only", opts: Options{Queue: "flag-q", MaxWait: time.Hour},
			want: &podspec.Admission{Queue: "flag-q", MaxWait: 2 * time.Second}},
		{name: "nearest declaration without a queue, no flag queue: no gate", scope: "wait-only", opts: DefaultOptions()},
		{name: "nearest declaration without a queue, start bound: the operator's gate", scope: "wait-only", opts: Options{MaxWait: time.Hour, MaxConcurrentStarts: 2},
			want: &podspec.Admission{MaxWait: 2 * time.Second}},
		{name: "scope without declaration, start bound", scope: "plain", opts: Options{MaxWait: time.Hour, MaxConcurrentStarts: 2}, want: &podspec.Admission{MaxWait: time.Hour}},
		{name: "missing scope", scope: "gone", opts: DefaultOptions()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "agents"}, Spec: v1alpha1.ToolCallSpec{Scope: tc.scope}}
			got, err := Resolve(context.Background(), c, call, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Resolve (-want +got):\n%s", d)
			}
		})
	}
}

// gatedJob is a Job behind the operator's bound, created at minute m.
func gatedJob(name string, m int, suspended bool) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "agents", UID: types.UID(name),
		CreationTimestamp: metav1.NewTime(time.Date(2026, 12, 6, 12, m, 0, 0, time.UTC)),
		Labels:            map[string]string{podspec.LabelStartGate: podspec.StartGateOperator, podcontract.LabelManagedBy: podcontract.ManagedByValue}},
		Spec: batchv1.JobSpec{Suspend: ptr.To(suspended)}}
}

// podOf is job's Pod, its tool container running or not yet.
func podOf(job *batchv1.Job, running bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-pod", Namespace: job.Namespace,
		Labels:          map[string]string{podcontract.LabelManagedBy: podcontract.ManagedByValue},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}}}
	state := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	if running {
		state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: podcontract.ToolContainerName, State: state}}
	return p
}

func TestSlotsDecide(t *testing.T) {
	resumedStarting := gatedJob("a-starting", 0, false)
	resumedRunning := gatedJob("b-running", 0, false)
	resumedNoPod := gatedJob("c-no-pod-yet", 0, false)
	oldest, tieFirst, tieSecond, newest := gatedJob("w-oldest", 1, true), gatedJob("w-tie-a", 2, true), gatedJob("w-tie-b", 2, true), gatedJob("w-newest", 3, true)
	objs := []client.Object{resumedStarting, resumedRunning, resumedNoPod, oldest, tieFirst, tieSecond, newest,
		podOf(resumedStarting, false), podOf(resumedRunning, true)}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).Build()
	for _, tc := range []struct {
		name string
		max  int
		job  *batchv1.Job
		want Verdict
	}{
		// two starting (one Pod creating, one not created yet); the running one frees its slot
		{name: "bound full", max: 2, job: oldest, want: Verdict{Resume: false, Position: 1, Starting: 2}},
		{name: "one slot: the oldest", max: 3, job: oldest, want: Verdict{Resume: true, Position: 1, Starting: 2}},
		{name: "one slot: not the second", max: 3, job: tieFirst, want: Verdict{Resume: false, Position: 2, Starting: 2}},
		{name: "ties by name", max: 4, job: tieFirst, want: Verdict{Resume: true, Position: 2, Starting: 2}},
		{name: "ties by name, second", max: 4, job: tieSecond, want: Verdict{Resume: false, Position: 3, Starting: 2}},
		{name: "unbounded", max: 0, job: newest, want: Verdict{Resume: true, Position: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NewSlots(c, tc.max).Decide(context.Background(), tc.job, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Decide (-want +got):\n%s", d)
			}
		})
	}
}

// A Job this operator resumed holds its slot even while the cache still shows it
// suspended: the next decision does not hand the same slot out again.
func TestSlotsCountTheirOwnResumes(t *testing.T) {
	a, b := gatedJob("a", 0, true), gatedJob("b", 1, true)
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(a, b).Build()
	s := NewSlots(c, 1)
	resumes := 0
	resume := func(context.Context, *batchv1.Job) error { resumes++; return nil } // the cache never sees it
	if v, err := s.Decide(context.Background(), a, resume); err != nil || !v.Resume {
		t.Fatalf("a: %+v, %v; want resumed", v, err)
	}
	if v, err := s.Decide(context.Background(), b, resume); err != nil || v.Resume || v.Starting != 1 {
		t.Fatalf("b: %+v, %v; want waiting behind a's start", v, err)
	}
	if v, err := s.Decide(context.Background(), a, resume); err != nil || v.Resume {
		t.Fatalf("a again: %+v, %v; want no second resume", v, err)
	}
	if resumes != 1 {
		t.Errorf("resumed %d times, want 1", resumes)
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := (Options{Queue: "Bad_Queue", MaxWait: 0, MaxConcurrentStarts: -1}).Validate(); err == nil {
		t.Error("invalid options accepted")
	}
}
