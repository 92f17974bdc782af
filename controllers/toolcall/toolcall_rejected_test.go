package toolcall

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor/jobexec"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/controllers/startgate"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
)

// refusingCluster is a fake API whose Job creates fail with refuse (nil: succeed), and a
// reconciler over it with a fake clock. The call "c" is Running its first attempt, whose
// Job does not exist yet.
type refusingCluster struct {
	r       *Reconciler
	clock   *clocktesting.FakeClock
	creates int
}

func newRefusingCluster(t *testing.T, refuse func() error) *refusingCluster {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(batchv1.AddToScheme(scheme))
	utilruntime.Must(networkingv1.AddToScheme(scheme))
	utilruntime.Must(corev1.AddToScheme(scheme)) // the namespace's frame key Secret
	args := []byte(`{"text":"x"}`)
	frozen, err := pipeline.Freeze(args, pipeline.FreezeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktesting.NewFakeClock(time.Now())
	start := metav1.NewTime(clock.Now())
	call := &v1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-1", Generation: 1, CreationTimestamp: start},
		Spec:       v1alpha1.ToolCallSpec{Tool: "_probe", Requester: "alice", Arguments: runtime.RawExtension{Raw: args}},
		Status: v1alpha1.ToolCallStatus{
			Phase: v1alpha1.PhaseRunning, Verdict: v1alpha1.VerdictAllow, ArgumentsDigest: frozen.Digest(),
			Tool: &v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "probe", Spec: &v1alpha1.ToolSpec{
				Timeout: &metav1.Duration{Duration: time.Minute},
				Body:    v1alpha1.ToolBody{Image: "example/probe:1", RunnerInImage: true},
			}},
			Job:       &v1alpha1.JobReference{Name: podspec.JobName("c", 1)},
			Attempts:  []v1alpha1.Attempt{{Attempt: 1, JobName: podspec.JobName("c", 1), StartTime: &start}},
			StartTime: &start,
		},
	}
	rc := &refusingCluster{clock: clock}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(call).
		WithStatusSubresource(&v1alpha1.ToolCall{}).
		WithIndex(&batchv1.Job{}, indexCallName, byCallAnnotation).
		WithIndex(&corev1.Pod{}, indexCallName, byCallAnnotation).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*batchv1.Job); ok {
				rc.creates++
				if err := refuse(); err != nil {
					return err
				}
			}
			return c.Create(ctx, obj, opts...)
		}}).Build()
	compiler, err := pipeline.NewCompiler(pipeline.CompilerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc.r = (&Reconciler{Client: c, APIReader: c, Scheme: scheme, Recorder: events.NewFakeRecorder(100),
		Clock: clock, Compiler: compiler, Options: options.DefaultCall()}).wire()
	return rc
}

func (rc *refusingCluster) reconcile(t *testing.T) (*v1alpha1.ToolCall, error) {
	t.Helper()
	ctx := context.Background()
	_, err := rc.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "c"}})
	call := &v1alpha1.ToolCall{}
	if getErr := rc.r.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "c"}, call); getErr != nil {
		t.Fatal(getErr)
	}
	return call, err
}

var jobResource = schema.GroupResource{Group: "batch", Resource: "jobs"}

func TestRefusedJobCreateEndsTheCall(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, "c-1",
		field.ErrorList{field.Invalid(field.NewPath("metadata", "labels"), "_probe", "a valid label must ...")})
	quota := apierrors.NewForbidden(jobResource, "c-1", errors.New("exceeded quota: jobs, requested: count/jobs.batch=1"))
	tests := []struct {
		name string
		err  error
		// refusals is how many reconciles return the error before the call ends.
		refusals int
		// stepAfter steps the clock past the attempt's deadline after that many refusals.
		stepAfter  int
		apiReason  string
		apiMessage string
	}{
		{"invalid ends at once", invalid, 0, 0, "Invalid", "a valid label must"},
		{"bad request ends at once", apierrors.NewBadRequest("malformed request body"), 0, 0, "BadRequest", "malformed request body"},
		{"quota ends after bounded retries", quota, jobexec.MaxCreateRefusals - 1, 0, "Forbidden", "exceeded quota"},
		{"admission webhook timeout ends after bounded retries", apierrors.NewTimeoutError("webhook", 1), jobexec.MaxCreateRefusals - 1, 0, "Timeout", "webhook"},
		{"a transport error ends after bounded retries", errors.New("connection refused"), jobexec.MaxCreateRefusals - 1, 0, "", "connection refused"},
		{"the attempt's deadline ends it sooner", quota, 2, 2, "Forbidden", "exceeded quota"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := newRefusingCluster(t, func() error { return tc.err })
			for i := range tc.refusals {
				if tc.stepAfter > 0 && i == tc.stepAfter {
					break
				}
				call, err := rc.reconcile(t)
				if err == nil || call.Status.Phase != v1alpha1.PhaseRunning {
					t.Fatalf("refusal %d: err %v, phase %s; want a retry through the rate limiter", i+1, err, call.Status.Phase)
				}
			}
			if tc.stepAfter > 0 {
				rc.clock.Step(pastDeadline())
			}
			call, err := rc.reconcile(t)
			if err != nil {
				t.Fatalf("final reconcile: %v", err)
			}
			res := call.Status.Result
			if call.Status.Phase != v1alpha1.PhaseFailed || res == nil || res.Reason != v1alpha1.ReasonExecutionRejected || !res.IsError {
				t.Fatalf("phase %s result %+v, want Failed ExecutionRejected", call.Status.Phase, res)
			}
			if res.Meta[pipeline.MetaKubernetesReason] != tc.apiReason {
				t.Errorf("meta %v, want kubernetesReason %q", res.Meta, tc.apiReason)
			}
			if strings.Contains(res.Error, tc.apiMessage) {
				t.Errorf("the model-facing error carries the API server's message: %q", res.Error)
			}
			cond := meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionExecuted)
			if cond == nil || cond.Reason != v1alpha1.ReasonExecutionRejected || !strings.Contains(cond.Message, tc.apiMessage) {
				t.Errorf("Executed condition %+v, want ExecutionRejected with the API server's message", cond)
			}
			if got := call.Status.Attempts[0].Reason; got != v1alpha1.ReasonExecutionRejected {
				t.Errorf("attempt reason %q", got)
			}
		})
	}
}

// A Running attempt whose Job was never created and whose deadline has passed (the
// operator was down in between) ends without creating the Job: a body never starts late.
func TestNoJobPastTheDeadlineEndsWithoutCreatingIt(t *testing.T) {
	rc := newRefusingCluster(t, func() error { return nil })
	rc.clock.Step(pastDeadline())
	call, err := rc.reconcile(t)
	if err != nil {
		t.Fatal(err)
	}
	if rc.creates != 0 {
		t.Errorf("%d Job creates after the deadline", rc.creates)
	}
	if call.Status.Phase != v1alpha1.PhaseFailed || call.Status.Result == nil || !call.Status.Result.IsError {
		t.Fatalf("phase %s result %+v, want Failed", call.Status.Phase, call.Status.Result)
	}
	// ImageNeverStarted, but the platform team reads that the image was not to blame.
	executed := meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionExecuted)
	if executed == nil || !strings.Contains(executed.Message, "no Job was created for this attempt before its deadline") {
		t.Errorf("Executed condition %+v, want the operator's account of the missing Job", executed)
	}
	if strings.Contains(call.Status.Result.Error, "operator") {
		t.Errorf("the result the agent reads names the operator: %q", call.Status.Result.Error)
	}
}

// Before the deadline the same call's Job is created, once.
func TestNoJobBeforeTheDeadlineCreatesIt(t *testing.T) {
	rc := newRefusingCluster(t, func() error { return nil })
	call, err := rc.reconcile(t)
	if err != nil || call.Status.Phase != v1alpha1.PhaseRunning || rc.creates != 1 {
		t.Fatalf("err %v phase %s creates %d", err, call.Status.Phase, rc.creates)
	}
}

// A Job that will wait for admission counts its deadline as the wait does: created late
// (the operator was down past the tool's timeout and grace) but within its bound on the
// wait, it is still created, suspended, for the tool's timeout counts from admission
// (docs/bursts.md); past the bound plus the timeout and grace, it is not. Found by the
// chaos harness: 2 s tools behind a queue ended ImageNeverStarted after restarts.
func TestALateJobOfAGatedAttemptCountsItsWaitBound(t *testing.T) {
	grace := options.DefaultCall().DeadlineGrace + options.DefaultCall().Job.Allowance()
	for _, tc := range []struct {
		name    string
		after   time.Duration
		creates int
		phase   v1alpha1.ToolCallPhase
	}{
		{"past the timeout and grace, within the bound on the wait", time.Minute + grace + time.Minute, 1, v1alpha1.PhaseRunning},
		{"past the bound too", 10*time.Minute + time.Minute + grace, 0, v1alpha1.PhaseFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := newRefusingCluster(t, func() error { return nil })
			rc.r.Options.Admission = startgate.Options{Queue: "tools", MaxWait: 10 * time.Minute}
			rc.clock.Step(tc.after)
			call, err := rc.reconcile(t)
			if err != nil {
				t.Fatal(err)
			}
			if rc.creates != tc.creates || call.Status.Phase != tc.phase {
				t.Errorf("%d Job creates, phase %s; want %d, %s", rc.creates, call.Status.Phase, tc.creates, tc.phase)
			}
		})
	}
}

// pastDeadline is how long after its start a 1-minute tool's attempt is past the
// operator's deadline: the timeout, the start allowance a Job adds, and the grace.
func pastDeadline() time.Duration {
	o := options.DefaultCall()
	return time.Minute + o.Job.Allowance() + o.DeadlineGrace
}
