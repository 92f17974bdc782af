package toolcall

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Post-execute's policies see the arguments admission froze, carried from admission, not
// spec.arguments frozen again: a call object whose spec no longer holds those arguments
// (spec.arguments is immutable in the API; the reconciler does not read it again) is
// judged on admission's bytes. Frozen again, the different arguments would not match the
// admitted digest and the result would be withheld (PolicyError).
func TestPostExecuteUsesTheArgumentsAdmissionFroze(t *testing.T) {
	policy := postPolicy("seen", v1alpha1.PolicyRule{Name: "x", Expression: `arguments.text == "x"`,
		Action: v1alpha1.ActionBlock, Message: "admitted arguments seen"})
	r, c := unitReconciler(t, interceptor.Funcs{}, unitEcho(), unitCall("c", "echo"), policy)
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "ns", Name: "c"}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	call := &v1alpha1.ToolCall{}
	if err := c.Get(ctx, key, call); err != nil || call.Status.Phase != v1alpha1.PhaseRunning {
		t.Fatalf("phase %s: %v", call.Status.Phase, err)
	}
	job := &batchv1.Job{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: podspec.JobName("c", 1)}, job); err != nil {
		t.Fatal(err)
	}
	if got := jobArguments(job); got != `{"text":"x"}` {
		t.Fatalf("the Job carries %q, want the canonical arguments", got)
	}
	if r.frozen.Size() != 1 {
		t.Fatalf("%d calls' arguments held after admission, want 1", r.frozen.Size())
	}

	call.Spec.Arguments = runtime.RawExtension{Raw: []byte(`{"text":"y"}`)}
	o := pipeline.Outcome{Started: true, Attempt: 1, Report: &pipeline.Report{Stdout: []byte(`{"ok":1}`)}}
	if _, err := r.finishAttempt(ctx, call, o); err != nil {
		t.Fatal(err)
	}
	if res := call.Status.Result; res == nil || res.Reason != string(pipeline.ReasonResultBlocked) || res.Error != "admitted arguments seen" {
		t.Fatalf("result %+v, want the block of a policy that saw the admitted arguments", res)
	}
	if r.frozen.Size() != 0 {
		t.Errorf("a finished call's arguments are still held")
	}
}

func jobArguments(job *batchv1.Job) string {
	for _, c := range job.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == podcontract.EnvArgs {
				return e.Value
			}
		}
	}
	return ""
}

// A deleted call's arguments go with it (controllers/frozenargs bounds what is held).
func TestFrozenArgumentsForgottenWithTheirCall(t *testing.T) {
	// Through the reconciler: a deleted call's arguments go with it.
	r, c := unitReconciler(t, interceptor.Funcs{}, unitEcho(), unitCall("gone", "echo"))
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "gone"}}
	if _, err := r.Reconcile(ctx, req); err != nil || r.frozen.Size() != 1 {
		t.Fatalf("admission: %v, %d held", err, r.frozen.Size())
	}
	if err := c.Delete(ctx, unitCall("gone", "echo")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil || r.frozen.Size() != 0 {
		t.Fatalf("after deletion: %v, %d held", err, r.frozen.Size())
	}
}
