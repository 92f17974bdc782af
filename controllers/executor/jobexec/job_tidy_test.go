package jobexec

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/executor/execenv"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// A call's Jobs are deleted by the operator only after their attempt's outcome is
// recorded, once the retention has passed, with background propagation (the Job before
// its Pod); the running attempt's Job is never touched.
func TestJobExecutorTidy(t *testing.T) {
	ended := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	retention := 10 * time.Minute
	owner := func(call *v1alpha1.ToolCall) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ToolCall",
			Name: call.Name, UID: call.UID, Controller: ptrTo(true)}}
	}
	tests := []struct {
		name string
		// phase of the call: attempt 1 ended at ended; a Running call runs attempt 2.
		phase v1alpha1.ToolCallPhase
		job   string // the Job looked at: c-1 or c-2
		now   time.Duration
		other bool // the Job is not controlled by the call
		// reason attempt 1 ended with ("": Succeeded)
		reason pipeline.Reason
		// want
		deleted bool
		wait    time.Duration
	}{
		{name: "terminal, within retention: kept", phase: v1alpha1.PhaseSucceeded, job: "c-1",
			now: time.Minute, wait: 9 * time.Minute},
		{name: "terminal, past retention: deleted", phase: v1alpha1.PhaseSucceeded, job: "c-1",
			now: retention, deleted: true},
		{name: "earlier attempt of a running call, past retention: deleted", phase: v1alpha1.PhaseRunning, job: "c-1",
			now: 11 * time.Minute, deleted: true},
		{name: "the running attempt's Job, however old: kept", phase: v1alpha1.PhaseRunning, job: "c-2",
			now: time.Hour},
		{name: "a Job the call does not control: kept", phase: v1alpha1.PhaseFailed, job: "c-1",
			now: time.Hour, other: true},
		// Its Pod's status may show what a body wrote in its own termination message.
		{name: "an attempt without a believed result (ResultUnreadable): deleted at once", phase: v1alpha1.PhaseFailed, job: "c-1",
			reason: pipeline.ReasonResultUnreadable, deleted: true},
		{name: "an attempt without a believed result (ExecutionLost): deleted at once", phase: v1alpha1.PhaseFailed, job: "c-1",
			reason: pipeline.ReasonExecutionLost, deleted: true},
		{name: "an honest failure (NonZeroExit), within retention: kept", phase: v1alpha1.PhaseFailed, job: "c-1",
			reason: pipeline.ReasonNonZeroExit, now: time.Minute, wait: 9 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			call := &v1alpha1.ToolCall{
				ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "call-uid"},
				Status: v1alpha1.ToolCallStatus{Phase: tc.phase,
					Attempts: []v1alpha1.Attempt{{Attempt: 1, JobName: "c-1", CompletionTime: &metav1.Time{Time: ended}, Reason: string(tc.reason)}}},
			}
			if tc.phase == v1alpha1.PhaseRunning {
				call.Status.Attempts = append(call.Status.Attempts, v1alpha1.Attempt{Attempt: 2, JobName: "c-2"})
				call.Status.Job = &v1alpha1.JobReference{Name: "c-2"}
			} else {
				call.Status.Job = &v1alpha1.JobReference{Name: "c-1"}
				call.Status.CompletionTime = &metav1.Time{Time: ended}
			}
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: tc.job, Namespace: "ns", UID: "job-uid",
				Annotations: map[string]string{podcontract.AnnotationCallName: "c"}, Finalizers: []string{podspec.JobFinalizer},
				OwnerReferences: owner(call)}}
			if tc.other {
				job.OwnerReferences = nil
			}
			var propagation *metav1.DeletionPropagation
			r, c := tidyFixture(t, ended.Add(tc.now), retention, job, &propagation)

			wait, err := r.Tidy(context.Background(), types.NamespacedName{Namespace: "ns", Name: "c"}, call)
			if err != nil {
				t.Fatal(err)
			}
			if wait != tc.wait {
				t.Errorf("next due in %v, want %v", wait, tc.wait)
			}
			err = c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: tc.job}, &batchv1.Job{})
			if gone := apierrors.IsNotFound(err); gone != tc.deleted {
				t.Fatalf("Job gone = %v (err %v), want %v", gone, err, tc.deleted)
			}
			if tc.deleted && (propagation == nil || *propagation != metav1.DeletePropagationBackground) {
				t.Errorf("deleted with propagation %v, want Background (the Job before its Pod)", propagation)
			}
			err = c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: podcontract.AttemptKeySecret(tc.job)}, &corev1.Secret{})
			if gone := apierrors.IsNotFound(err); gone != tc.deleted {
				t.Errorf("the attempt's key Secret gone = %v (err %v), want it to go with its Job (%v)", gone, err, tc.deleted)
			}
		})
	}
}

// A Job being deleted keeps podspec.JobFinalizer while its attempt runs, and loses it otherwise.
func TestJobExecutorTidyReleasesDeletedJobs(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, running := range []bool{true, false} {
		call := &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "call-uid"},
			Status: v1alpha1.ToolCallStatus{Phase: v1alpha1.PhaseSucceeded, Job: &v1alpha1.JobReference{Name: "c-1"},
				Attempts: []v1alpha1.Attempt{{Attempt: 1, JobName: "c-1"}}}}
		if running {
			call.Status.Phase = v1alpha1.PhaseRunning
		}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "c-1", Namespace: "ns", UID: "job-uid",
			Annotations: map[string]string{podcontract.AnnotationCallName: "c"}, Finalizers: []string{podspec.JobFinalizer}}}
		var propagation *metav1.DeletionPropagation
		r, c := tidyFixture(t, now, time.Minute, job, &propagation)
		if err := c.Delete(context.Background(), job); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Tidy(context.Background(), types.NamespacedName{Namespace: "ns", Name: "c"}, call); err != nil {
			t.Fatal(err)
		}
		err := c.Get(context.Background(), client.ObjectKeyFromObject(job), &batchv1.Job{})
		if held := err == nil; held != running {
			t.Errorf("running=%v: Job still held = %v (err %v)", running, held, err)
		}
	}
}

func tidyFixture(t *testing.T, now time.Time, retention time.Duration, job *batchv1.Job, propagation **metav1.DeletionPropagation) (*Executor, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(batchv1.AddToScheme(scheme))
	utilruntime.Must(corev1.AddToScheme(scheme))
	utilruntime.Must(networkingv1.AddToScheme(scheme))
	// The attempt's key Secret, the operator's: controlled by the call, as its Job is.
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: podcontract.AttemptKeySecret(job.Name),
		OwnerReferences: job.OwnerReferences}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(job, key).
		WithIndex(&batchv1.Job{}, executor.IndexCallName, func(o client.Object) []string {
			return []string{o.GetAnnotations()[podcontract.AnnotationCallName]}
		}).
		WithIndex(&corev1.Pod{}, executor.IndexCallName, func(o client.Object) []string {
			return []string{o.GetAnnotations()[podcontract.AnnotationCallName]}
		}).
		WithInterceptorFuncs(interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*batchv1.Job); ok {
				do := &client.DeleteOptions{}
				do.ApplyOptions(opts)
				*propagation = do.PropagationPolicy
			}
			return c.Delete(ctx, obj, opts...)
		}}).Build()
	opts := options.DefaultCall()
	opts.JobRetention = retention
	return New(execenv.Env{Client: c, APIReader: c, Scheme: scheme, Clock: clocktesting.NewFakeClock(now), Options: opts}), c
}

func ptrTo[T any](v T) *T { return &v }

// The operator deletes an attempt's key Secret only when it made it for that call: a
// tenant's Secret that merely has the name (a call named to match it) is left alone.
func TestDeleteAttemptKeyOnlyTheCallsOwn(t *testing.T) {
	callUID := types.UID("call-uid")
	own := []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ToolCall", Name: "x",
		UID: callUID, Controller: ptrTo(true)}}
	for _, tc := range []struct {
		name   string
		owners []metav1.OwnerReference
		gone   bool
	}{
		{"the call's own", own, true},
		{"a tenant's, no owner", nil, false},
		{"another call's", []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ToolCall", Name: "x",
			UID: "other-uid", Controller: ptrTo(true)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "x-1", Namespace: "ns", OwnerReferences: tc.owners}}
			var propagation *metav1.DeletionPropagation
			r, c := tidyFixture(t, time.Now(), time.Minute, job, &propagation)
			r.deleteAttemptKey(context.Background(), callUID, "ns", "x-1")
			err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: podcontract.AttemptKeySecret("x-1")}, &corev1.Secret{})
			if gone := apierrors.IsNotFound(err); gone != tc.gone {
				t.Errorf("Secret gone = %v (err %v), want %v", gone, err, tc.gone)
			}
		})
	}
}

// A Job whose Pod shows a termination message in the body's container (a body killed before
// the runner's side emptied it) is deleted as soon as its attempt's end is recorded, not
// kept for the retention: nobody is to read what the body wrote there.
func TestTidyDeletesAtOnceAPodShowingTheBodysMessage(t *testing.T) {
	ended := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, message := range []string{"", forgedFrameText} {
		call := &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "call-uid"},
			Status: v1alpha1.ToolCallStatus{Phase: v1alpha1.PhaseFailed, Job: &v1alpha1.JobReference{Name: "c-1"}, CompletionTime: &metav1.Time{Time: ended},
				Attempts: []v1alpha1.Attempt{{Attempt: 1, JobName: "c-1", CompletionTime: &metav1.Time{Time: ended}, Reason: string(pipeline.ReasonOOMKilled)}}}}
		ref := []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ToolCall", Name: "c", UID: call.UID, Controller: ptrTo(true)}}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "c-1", Namespace: "ns", UID: "job-uid",
			Annotations: map[string]string{podcontract.AnnotationCallName: "c"}, OwnerReferences: ref}}
		var propagation *metav1.DeletionPropagation
		r, c := tidyFixture(t, ended.Add(time.Minute), 10*time.Minute, job, &propagation)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-1-abcde", Namespace: "ns", Annotations: job.Annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "c-1", UID: job.UID, Controller: ptrTo(true)}}}}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: podcontract.ToolContainerName, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", Message: message}}}}
		if err := c.Create(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Tidy(context.Background(), types.NamespacedName{Namespace: "ns", Name: "c"}, call); err != nil {
			t.Fatal(err)
		}
		err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "c-1"}, &batchv1.Job{})
		if gone := apierrors.IsNotFound(err); gone != (message != "") {
			t.Errorf("body message %q: Job gone = %v, want %v", message, gone, message != "")
		}
	}
}

const forgedFrameText = `{"v":1,"stdout":"FORGED"}`
