package toolcall

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// A call cancelled right after it started, before the cache saw its new Job, still has its
// Job deleted: absent from the cache, the Job is read from the API server (the gateway
// suite caught the Job left running for its retention when it was not).
func TestCancelStopsAJobTheCacheHasNotSeen(t *testing.T) {
	call := unitCall("c", "echo")
	call.Spec.Cancel = true
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: podspec.JobName("c", 1), Namespace: "ns", UID: "job-uid",
		Finalizers: []string{podspec.JobFinalizer}, Annotations: map[string]string{podcontract.AnnotationCallName: "c"}}}
	r, live := unitReconciler(t, interceptor.Funcs{}, call, job)
	now := metav1.NewTime(r.Clock.Now())
	call.Status = v1alpha1.ToolCallStatus{Phase: v1alpha1.PhaseRunning, Job: &v1alpha1.JobReference{Name: job.Name},
		Attempts: []v1alpha1.Attempt{{Attempt: 1, JobName: job.Name, StartTime: &now}}}
	if err := live.Status().Update(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	r.Client = interceptor.NewClient(live.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, isJob := obj.(*batchv1.Job); isJob {
				return apierrors.NewNotFound(batchv1.Resource("jobs"), key.Name) // the cache is behind
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "c"}}); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.ToolCall{}
	if err := live.Get(context.Background(), client.ObjectKeyFromObject(call), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.PhaseFailed || got.Status.Result == nil || got.Status.Result.Reason != v1alpha1.ReasonCancelled {
		t.Fatalf("call: phase %s result %+v", got.Status.Phase, got.Status.Result)
	}
	if got.Status.Attempts[0].Reason != v1alpha1.ReasonCancelled || got.Status.Attempts[0].CompletionTime == nil {
		t.Errorf("attempt: %+v", got.Status.Attempts[0])
	}
	stopped := &batchv1.Job{}
	if err := live.Get(context.Background(), client.ObjectKeyFromObject(job), stopped); err != nil {
		t.Fatal(err)
	}
	if stopped.DeletionTimestamp.IsZero() {
		t.Error("the Job was not deleted")
	}
}
