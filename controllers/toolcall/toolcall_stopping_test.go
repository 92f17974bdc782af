package toolcall

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

func TestPodQuiet(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError"}}
	ended := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143}}
	status := func(phase corev1.PodPhase, init []corev1.ContainerState, states ...corev1.ContainerState) corev1.PodStatus {
		st := corev1.PodStatus{Phase: phase}
		for _, s := range init {
			st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{Name: "runner", State: s})
		}
		for _, s := range states {
			st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{Name: podcontract.ToolContainerName, State: s})
		}
		return st
	}
	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
		quiet  bool
	}{
		{"the body runs", status(corev1.PodRunning, nil, running), false},
		{"the body runs after SIGTERM, the Pod being deleted", status(corev1.PodRunning, []corev1.ContainerState{ended}, running), false},
		{"the tool container terminated", status(corev1.PodRunning, []corev1.ContainerState{ended}, ended), true},
		{"the Pod failed, its container terminated", status(corev1.PodFailed, nil, ended), true},
		{"the Pod failed, its container still reported running", status(corev1.PodFailed, nil, running), false},
		{"the container waits for a Secret: it may start", status(corev1.PodPending, nil, waiting), false},
		{"the Pod failed while its container waited", status(corev1.PodFailed, nil, waiting), true},
		{"the init container runs", status(corev1.PodPending, []corev1.ContainerState{running}, waiting), false},
		{"the kubelet has not reported", status(corev1.PodPending, nil), false},
		{"the Pod succeeded", status(corev1.PodSucceeded, nil), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podQuiet(&corev1.Pod{Status: tc.status}); got != tc.quiet {
				t.Errorf("podQuiet = %v, want %v", got, tc.quiet)
			}
		})
	}
}

// stoppingWorld is a call cancelled while its attempt's Pod runs: the Job and the Pod (held
// by a finalizer, as the API server holds a deleted Pod until its kubelet confirms it stopped).
func stoppingWorld(t *testing.T, funcs interceptor.Funcs, pod func(*corev1.Pod)) (*Reconciler, client.Client, *v1alpha1.ToolCall, *corev1.Pod) {
	t.Helper()
	call := unitCall("c", "echo")
	call.Spec.Cancel = true
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: podspec.JobName("c", 1), Namespace: "ns", UID: "job-uid",
		Finalizers: []string{podspec.JobFinalizer}, Annotations: map[string]string{podcontract.AnnotationCallName: "c"}}}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "c-1-abcde", Namespace: "ns", UID: "pod-uid", Finalizers: []string{"test/kubelet"},
			Labels:      map[string]string{podcontract.LabelCall: "c", podcontract.LabelAttempt: "1"},
			Annotations: map[string]string{podcontract.AnnotationCallName: "c"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-a"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: podcontract.ToolContainerName,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	if pod != nil {
		pod(p)
	}
	r, c := unitReconciler(t, funcs, call, job, p)
	now := metav1.NewTime(r.Clock.Now())
	call.Status = v1alpha1.ToolCallStatus{Phase: v1alpha1.PhaseRunning, Job: &v1alpha1.JobReference{Name: job.Name},
		Attempts: []v1alpha1.Attempt{{Attempt: 1, JobName: job.Name, StartTime: &now}}}
	if err := c.Status().Update(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	return r, c, call, p
}

func reconcileCall(t *testing.T, r *Reconciler, c client.Client) (ctrl.Result, *v1alpha1.ToolCall) {
	t.Helper()
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	if err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.ToolCall{}
	if err := c.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	return res, got
}

// A cancelled call whose body runs on after SIGTERM stays Running, its Executed condition
// saying it waits for the Pod, until the Pod's containers have stopped; only then is it
// Cancelled, saying its execution was stopped.
func TestCancelWaitsUntilThePodHasStopped(t *testing.T) {
	r, c, _, pod := stoppingWorld(t, interceptor.Funcs{}, nil)

	res, got := reconcileCall(t, r, c)
	if got.Status.Phase != v1alpha1.PhaseRunning {
		t.Fatalf("phase %s while the body runs, want Running: %+v", got.Status.Phase, got.Status.Result)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionExecuted)
	if cond == nil || cond.Reason != v1alpha1.ReasonStopping || !strings.Contains(cond.Message, pod.Name) {
		t.Errorf("Executed = %+v, want Stopping naming the Pod", cond)
	}
	if res.RequeueAfter <= 0 {
		t.Errorf("result %+v: the wait is bounded, it must look again", res)
	}
	live := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), live); err != nil || live.DeletionTimestamp.IsZero() {
		t.Fatalf("the Pod is asked to stop: %v, %v", err, live.DeletionTimestamp)
	}
	if _, got = reconcileCall(t, r, c); got.Status.Phase != v1alpha1.PhaseRunning {
		t.Fatalf("phase %s on the next pass while the Pod still runs", got.Status.Phase)
	}

	live.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}
	if err := c.Status().Update(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	_, got = reconcileCall(t, r, c)
	if got.Status.Phase != v1alpha1.PhaseFailed || got.Status.Result == nil || got.Status.Result.Reason != v1alpha1.ReasonCancelled {
		t.Fatalf("once the Pod stopped: phase %s result %+v", got.Status.Phase, got.Status.Result)
	}
	if want := pipeline.Cancelled(pipeline.CancelledWhileRunning, 1).Error; got.Status.Result.Error != want {
		t.Errorf("result %q, want %q", got.Status.Result.Error, want)
	}
	if cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionExecuted); !strings.Contains(cond.Message, "every Pod of the attempt has stopped") {
		t.Errorf("Executed message %q", cond.Message)
	}
}

// A Pod that never confirms it stopped (its node is gone) holds the call only for its grace
// period and DeadlineGrace: then the end is recorded without claiming the body stopped, and
// only after that write is the Pod force-deleted.
func TestAPodThatNeverConfirmsIsForceDeletedAfterTheRecord(t *testing.T) {
	var order []string
	funcs := interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if call, ok := obj.(*v1alpha1.ToolCall); ok && call.Status.Phase.IsTerminal() {
				order = append(order, "terminal status")
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				do := (&client.DeleteOptions{}).ApplyOptions(opts)
				if do.GracePeriodSeconds != nil && *do.GracePeriodSeconds == 0 {
					order = append(order, "force-delete "+obj.GetName())
				}
			}
			return c.Delete(ctx, obj, opts...)
		},
	}
	var deleted metav1.Time
	r, c, _, pod := stoppingWorld(t, funcs, func(p *corev1.Pod) {
		deleted = metav1.NewTime(time.Now().Add(-time.Second))
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &deleted, ptr.To[int64](5)
	})

	if _, got := reconcileCall(t, r, c); got.Status.Phase != v1alpha1.PhaseRunning {
		t.Fatalf("phase %s before the bound, want Running", got.Status.Phase)
	}
	r.Clock = clockAt(deleted.Add(r.Options.DeadlineGrace))
	_, got := reconcileCall(t, r, c)
	if got.Status.Result == nil || got.Status.Result.Meta[pipeline.MetaCancelled] != pipeline.CancelledWhileRunningUnconfirmed {
		t.Fatalf("result %+v, want cancelled %s", got.Status.Result, pipeline.CancelledWhileRunningUnconfirmed)
	}
	if strings.Contains(got.Status.Result.Error, "was stopped") {
		t.Errorf("result %q claims the execution stopped", got.Status.Result.Error)
	}
	if cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionExecuted); !strings.Contains(cond.Message, "force-deleted") {
		t.Errorf("Executed message %q does not say the Pod is force-deleted", cond.Message)
	}
	if want := []string{"terminal status", "force-delete " + pod.Name}; strings.Join(order, ",") != strings.Join(want, ",") {
		t.Errorf("order %q, want %q", order, want)
	}
}

// An attempt that ended without the runner's word while its Pod may still start a body (a
// container waiting for a Secret, which the kubelet retries) waits for the Pod, which the
// operator deletes, and records the outcome it first read (CredentialMissing), not one read
// from what is left once the Pod is gone (nothing: the attempt would run to its deadline).
func TestAnEndWithoutTheRunnersWordWaitsForThePod(t *testing.T) {
	r, c, call, pod := stoppingWorld(t, interceptor.Funcs{}, func(p *corev1.Pod) {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: podcontract.ToolContainerName,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError",
				Message: `secret "github" not found`}}}}}
	})
	call.Spec.Cancel = false
	if err := c.Update(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	tool := unitEcho()
	call.Status.Tool = &v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "echo", Spec: &tool.Spec.ToolSpec}
	frozen, err := pipeline.Freeze(call.Spec.Arguments.Raw, pipeline.FreezeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	call.Status.ArgumentsDigest = frozen.Digest()
	if err := c.Status().Update(context.Background(), call); err != nil {
		t.Fatal(err)
	}

	_, got := reconcileCall(t, r, c)
	if got.Status.Phase != v1alpha1.PhaseRunning {
		t.Fatalf("phase %s while the Pod may still start the body, want Running: %+v", got.Status.Phase, got.Status.Result)
	}
	if cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionExecuted); cond == nil || cond.Reason != v1alpha1.ReasonStopping {
		t.Errorf("Executed = %+v, want Stopping", cond)
	}
	live := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), live); err != nil || live.DeletionTimestamp.IsZero() {
		t.Fatalf("the Pod is asked to stop: %v", err)
	}

	live.Finalizers = nil // the kubelet confirmed: the Pod goes, and with it what observe could read
	if err := c.Update(context.Background(), live); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	_, got = reconcileCall(t, r, c)
	if got.Status.Result == nil || got.Status.Result.Reason != v1alpha1.ReasonCredentialMissing {
		t.Fatalf("phase %s result %+v, want the CredentialMissing first read", got.Status.Phase, got.Status.Result)
	}
}

func clockAt(t time.Time) *clocktesting.FakeClock { return clocktesting.NewFakeClock(t) }

// A cancelled call that runs in a claimed warm Pod waits the same way: the Pod is deleted,
// and the call ends only once its container has stopped.
func TestCancelOfAWarmAttemptWaitsForItsPod(t *testing.T) {
	r, c, call, pod := stoppingWorld(t, interceptor.Funcs{}, func(p *corev1.Pod) {
		p.OwnerReferences = nil
		p.Annotations[podcontract.AnnotationClaimedBy] = "uid-c"
	})
	call.Status.Job = nil
	call.Status.Attempts[0].JobName, call.Status.Attempts[0].Path, call.Status.Attempts[0].PodName = "", v1alpha1.PathWarm, pod.Name
	if err := c.Status().Update(context.Background(), call); err != nil {
		t.Fatal(err)
	}

	if _, got := reconcileCall(t, r, c); got.Status.Phase != v1alpha1.PhaseRunning {
		t.Fatalf("phase %s while the warm body runs, want Running", got.Status.Phase)
	}
	live := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), live); err != nil || live.DeletionTimestamp.IsZero() {
		t.Fatalf("the warm Pod is deleted: %v", err)
	}
	live.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}
	if err := c.Status().Update(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	_, got := reconcileCall(t, r, c)
	if got.Status.Result == nil || got.Status.Result.Meta[pipeline.MetaCancelled] != pipeline.CancelledWhileRunning {
		t.Fatalf("once the Pod stopped: phase %s result %+v", got.Status.Phase, got.Status.Result)
	}
}
