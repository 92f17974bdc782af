package toolcall

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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// unitReconciler is a Reconciler over one fake client (cache and live reader
// alike), with the Job index the reconciler lists by and optional interceptors.
func unitReconciler(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) (*Reconciler, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(batchv1.AddToScheme(scheme))
	utilruntime.Must(networkingv1.AddToScheme(scheme))
	utilruntime.Must(corev1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.ToolCall{}, &v1alpha1.ToolCallApproval{}).
		WithIndex(&batchv1.Job{}, indexCallName, byCallAnnotation).
		WithIndex(&corev1.Pod{}, indexCallName, byCallAnnotation).
		WithIndex(&v1alpha1.ToolCall{}, indexActivePhase, activePhase).
		WithInterceptorFuncs(funcs).Build()
	compiler, err := pipeline.NewCompiler(pipeline.CompilerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return (&Reconciler{Client: c, APIReader: c, Scheme: scheme,
		Recorder: events.NewFakeRecorder(100), Clock: clocktesting.NewFakeClock(time.Now()),
		Compiler: compiler, Options: options.DefaultCall()}).wire(), c
}

func byCallAnnotation(o client.Object) []string {
	return []string{o.GetAnnotations()[podcontract.AnnotationCallName]}
}

// unitEcho is the Tool echo in namespace ns.
func unitEcho() *v1alpha1.Tool {
	return &v1alpha1.Tool{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "ns"},
		Spec: v1alpha1.NamespacedToolSpec{ToolSpec: v1alpha1.ToolSpec{
			Timeout: &metav1.Duration{Duration: time.Minute},
			Body:    v1alpha1.ToolBody{Image: "example/echo:1", RunnerInImage: true},
		}},
	}
}

func unitCall(name, tool string) *v1alpha1.ToolCall {
	return &v1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 1, UID: types.UID("uid-" + name)},
		Spec: v1alpha1.ToolCallSpec{Tool: tool, Requester: "alice",
			Arguments: runtime.RawExtension{Raw: []byte(`{"text":"x"}`)}},
	}
}

// A status write that lost a race goes back through the controller's rate-limited queue
// (the error is returned), never through a fixed short RequeueAfter that under load makes
// up to 100 passes a second per call.
func TestWriteConflictRequeuesThroughTheRateLimiter(t *testing.T) {
	conflicts := 0
	conflict := interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		conflicts++
		return apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "toolcalls"},
			obj.GetName(), nil)
	}}
	r, _ := unitReconciler(t, conflict, unitEcho(), unitCall("c", "echo"))
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "c"}})
	if conflicts == 0 {
		t.Fatal("the reconcile wrote no status: the test does not exercise the conflict path")
	}
	if !apierrors.IsConflict(err) {
		t.Errorf("error = %v, want the conflict returned (the controller requeues it rate-limited)", err)
	}
	if res != (ctrl.Result{}) {
		t.Errorf("result = %+v, want none: a returned error is requeued with the rate limiter's backoff", res)
	}
}

// An attempt whose image is never pulled ends ImageNeverStarted and its Job is stopped; a
// terminal write that loses a race must not have stopped the Job already, or the retried
// pass finds the Job deleting and records JobDeleted instead (the adversarial catalogue's
// img-private row caught it under -race).
func TestJobStoppedOnlyAfterTheOutcomeIsWritten(t *testing.T) {
	conflicts := 0
	conflictOnce := interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		if conflicts == 0 {
			conflicts++
			return apierrors.NewConflict(schema.GroupResource{Group: "toolgate.dev", Resource: "toolcalls"}, obj.GetName(), nil)
		}
		return c.SubResource(sub).Update(ctx, obj, opts...)
	}}
	call := unitCall("c", "echo")
	call.Status.Phase = v1alpha1.PhaseRunning
	call.Status.Tool = &v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "echo", Spec: &unitEcho().Spec.ToolSpec}
	call.Status.Attempts = []v1alpha1.Attempt{{Attempt: 1, JobName: podspec.JobName("c", 1)}}
	frozen, err := pipeline.Freeze(call.Spec.Arguments.Raw, pipeline.FreezeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	call.Status.ArgumentsDigest = frozen.Digest()
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: podspec.JobName("c", 1), Namespace: "ns", Finalizers: []string{"toolgate.dev/outcome"}}}
	r, c := unitReconciler(t, conflictOnce, call, job)
	outcome := pipeline.Outcome{Attempt: 1, TerminationReason: "ImagePullBackOff"}

	if _, err := r.finishAttempt(context.Background(), call.DeepCopy(), outcome); !apierrors.IsConflict(err) {
		t.Fatalf("first pass: %v, want the conflict", err)
	}
	got := &batchv1.Job{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(job), got); err != nil || !got.DeletionTimestamp.IsZero() {
		t.Fatalf("after a lost write the Job is untouched: %v, deletionTimestamp %v", err, got.DeletionTimestamp)
	}
	fresh := &v1alpha1.ToolCall{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(call), fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := r.finishAttempt(context.Background(), fresh, outcome); err != nil {
		t.Fatalf("second pass: %v", err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(call), fresh); err != nil {
		t.Fatal(err)
	}
	if fresh.Status.Result == nil || fresh.Status.Result.Reason != v1alpha1.ReasonImageNeverStarted {
		t.Fatalf("result %+v, want ImageNeverStarted", fresh.Status.Result)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(job), got); err == nil && got.DeletionTimestamp.IsZero() {
		t.Fatal("the Job of an image never pulled is stopped once the outcome is written")
	}
}
